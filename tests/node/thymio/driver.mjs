// Thymio Suite's JavaScript client (@mobsya-association/thymio-api 0.11.1, unchanged) driven by JSON lines.
//
// The package is bundled at start-up with esbuild for the browser, as VPL3, Scratch and Blockly bundle it,
// and run in Node with the browser globals it expects: `WebSocket` (the `ws` package, which has the browser
// API) and `document` (its flexbuffers WASM loader reads `document.currentScript`). Nothing of the client
// is patched.
//
//   node driver.mjs            (stdin: one JSON command a line; stdout: one JSON line per reply or event)
//
// Command: {"id": any, "op": name, "client": "default", ...arguments}; "client" names one of several
// connections this process holds (a classroom bench runs every student and the teacher in one process).
// Reply:   {"id": same, "ok": true, "result": ...} or {"id": same, "ok": false, "error": text, "code": n|null}
//          (code: the TDM's ErrorType when the server answered Error; error: the compiler's message for a
//          CompilationResultFailure). Every op ends within its "timeoutMs" (default 10000).
// Event:   {"event": kind, "client": name, "node": name|null, "at": ms (performance.now()), ...} for what the
//          server pushes to a watcher: "nodes" {nodes}, "variables" {vars}, "sharedVariables" {vars, group},
//          "eventsDescriptions" {events, group}, "events" {events}, "scratchpad" {text, language},
//          "vmState" {state, line, error, message}, "close" {code}.
// A node argument ("node") is a node's name (the gateway device id) or its id "{…}".
//
// Ops (arguments; result):
//   connect {url, password?}                   connect and wait for the first NodesChanged; nodes
//   nodes {}                                   the nodes the client knows; [{id, name, group, status, type}]
//   waitNodes {count?, status?}                until `count` nodes (with `status`, e.g. "available") are known
//   waitStatus {node, status}                  until the node has that status ("busy", "available", …)
//   waitGone {node}                            until the node has left the client's list (NodesChanged disconnected)
//   lock {node} / unlock {node}                LockNode / UnlockNode
//   description {node}                         asebaVMDescription(); {variables, events, functions} names
//   setEventsDescriptions {node, events: [{name, fixed_size}], group?: true}   RegisterEvents on the node (or its group)
//   sendAsebaProgram {node, code, check?}      compile and load (check: the check-only form, dontLoadOnTarget)
//   setScratchPad {node, text, language?}      ScratchpadUpdate (language: 1 Aseba, the default)
//   runProgram {node}                          SetVMExecutionState Run
//   setVariables {node, vars: {name: value}}   node variables (value: a number or a list of numbers)
//   watchVariables {node} / watchEvents {node} set onVariablesChanged / onEvents (events are reported)
//   watchGroup {node}                          watchSharedVariablesAndEvents(true) on the node's group
//   watchScratchpads {node}                    the Scratchpads watch flag (0x20) on the node, onScratchpadChanged
//   groupSetVariables {node, vars}             the group's shared variables (group.setVariables)
//   groupEmitEvents {node, events: {name: value|null}}   group.emitEvents (value null: an event without data)
//   emitEvents {node, events}                  node.emitEvents
//   waitVariable {node, name, value, shared?}  until a (shared) variable equals value (a number or list); its value
//   waitEvent {node, name}                     until the node emits that event; its value
//   waitScratchpad {node, text}                until a ScratchpadUpdate with that text arrives for the node
//   close {}                                   close the connection
//   exit {}                                    close every connection and end the process
import { build } from "esbuild";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { dirname } from "node:path";
import WebSocket from "ws";

// thymio-api logs to the console; stdout is this driver's protocol, so its lines go to stderr.
const log = (...args) => process.stderr.write(args.map(String).join(" ") + "\n");
console.log = log;
console.info = log;
console.warn = log;
console.error = log;

const here = dirname(fileURLToPath(import.meta.url));
const bundled = await build({
  stdin: { contents: 'export * from "@mobsya-association/thymio-api";', resolveDir: here, loader: "js" },
  bundle: true, format: "esm", platform: "browser", write: false, logLevel: "error",
});
globalThis.WebSocket = WebSocket;
globalThis.document = globalThis.document ?? { currentScript: null };
const api = await import("data:text/javascript;base64," + Buffer.from(bundled.outputFiles[0].text).toString("base64"));
const STATUS = ["unknown", "connected", "available", "busy", "ready", "disconnected"];

const clients = new Map(); // name -> {client, watchers: Set of (event) => void}

function emit(message) {
  process.stdout.write(JSON.stringify({ at: performance.now(), ...message }, plain) + "\n");
}

// Map -> object, Number objects -> numbers, typed arrays -> arrays (thymio-api hands out all three).
function plain(_key, value) {
  if (value instanceof Map) return Object.fromEntries(value);
  if (ArrayBuffer.isView(value)) return Array.from(value);
  return value;
}

function value(v) {
  return JSON.parse(JSON.stringify(v ?? null, plain));
}

function same(a, b) {
  const left = value(a);
  const right = value(b);
  const list = (x) => (Array.isArray(x) ? x : [x]);
  return JSON.stringify(list(left)) === JSON.stringify(list(right));
}

function describe(node) {
  return {
    id: node.id.toString(), name: node.name, group: node.group ? node.group.id.toString() : null,
    status: node.statusAsString, type: node.typeAsString,
  };
}

function entry(name) {
  const found = clients.get(name);
  if (!found) throw new Error(`no client ${name}: connect first`);
  return found;
}

function findNode(state, key) {
  const node = state.client.nodes.find((n) => n.name === key || n.id.toString() === key);
  if (!node) throw new Error(`client has no node ${key}`);
  return node;
}

// Resolve when `test(event)` holds for an event of this client (or at once when `now()` is truthy).
function until(state, test, now) {
  const already = now?.();
  if (already) return Promise.resolve(already);
  return new Promise((resolve) => {
    const watcher = (event) => {
      const hit = test(event);
      if (hit) {
        state.watchers.delete(watcher);
        resolve(hit);
      }
    };
    state.watchers.add(watcher);
  });
}

function notify(state, message) {
  emit(message);
  for (const watcher of [...state.watchers]) watcher(message);
}

function connect(name, url, password) {
  const client = api.createClient(url, password ?? "");
  const state = { client, watchers: new Set(), scratchpads: new Map(), variables: new Map(), shared: new Map() };
  clients.set(name, state);
  client.onNodesChanged = (nodes) => notify(state, { event: "nodes", client: name, node: null, nodes: nodes.map(describe) });
  client.onClose = (event) => notify(state, { event: "close", client: name, node: null, code: event?.code ?? null });
  return until(state, (e) => (e.event === "nodes" ? client.nodes.map(describe) : e.event === "close" ? "closed" : null))
    .then((nodes) => {
      if (nodes === "closed") throw new Error("the server closed the connection");
      return nodes;
    });
}

function watchNode(name, state, node, kind) {
  const who = { client: name, node: node.name };
  if (kind === "variables") {
    node.onVariablesChanged = (vars) => {
      for (const [key, v] of vars) state.variables.set(`${node.name}/${key}`, v);
      notify(state, { event: "variables", ...who, vars });
    };
  } else if (kind === "events") {
    node.onEvents = (events) => notify(state, { event: "events", ...who, events });
  } else if (kind === "scratchpads") {
    node.onScratchpadChanged = (text, language) => {
      state.scratchpads.set(node.name, text);
      notify(state, { event: "scratchpad", ...who, text, language });
    };
    return node._set_monitoring_flags(0x20, true);
  } else if (kind === "group") {
    const group = node.group;
    group.onVariablesChanged = (vars) => {
      for (const [key, v] of vars) state.shared.set(`${node.name}/${key}`, v);
      notify(state, { event: "sharedVariables", ...who, group: group.id.toString(), vars });
    };
    group.onEventsDescriptionsChanged = (events) =>
      notify(state, { event: "eventsDescriptions", ...who, group: group.id.toString(), events });
    return group.watchSharedVariablesAndEvents(true);
  } else if (kind === "vmState") {
    node.onVmExecutionStateChanged = (stateCode, line, error, message) =>
      notify(state, { event: "vmState", ...who, state: stateCode, line, error, message });
  }
  return undefined;
}

async function run(command) {
  const name = command.client ?? "default";
  if (command.op === "connect") return connect(name, command.url, command.password);
  if (command.op === "exit") {
    for (const state of clients.values()) state.client._socket?.close();
    setTimeout(() => process.exit(0), 50);
    return null;
  }
  const state = entry(name);
  const client = state.client;
  const node = command.node === undefined ? null : () => findNode(state, command.node);
  switch (command.op) {
    case "nodes":
      return client.nodes.map(describe);
    case "waitNodes": {
      const enough = () => {
        const nodes = client.nodes.filter((n) => !command.status || n.statusAsString === command.status);
        return nodes.length >= (command.count ?? 1) ? client.nodes.map(describe) : null;
      };
      return until(state, () => enough(), enough);
    }
    case "waitStatus": {
      const check = () => {
        const found = client.nodes.find((n) => n.name === command.node || n.id.toString() === command.node);
        return found && found.statusAsString === command.status ? describe(found) : null;
      };
      return until(state, () => check(), check);
    }
    case "waitGone": {
      const gone = () => (client.nodes.some((n) => n.name === command.node) ? null : "gone");
      return until(state, () => gone(), gone);
    }
    case "lock":
      return node().lock();
    case "unlock":
      return node().unlock();
    case "description": {
      const description = await node().asebaVMDescription();
      return {
        variables: description.variables.map((v) => v.name), events: description.events.map((e) => e.name),
        functions: description.functions.map((f) => f.name),
      };
    }
    case "setEventsDescriptions": {
      const target = command.group ? node().group : node();
      return target.setEventsDescriptions(command.events);
    }
    case "sendAsebaProgram":
      return node().sendAsebaProgram(command.code, !!command.check);
    case "setScratchPad":
      return node().setScratchPad(command.text, command.language ?? api.ProgrammingLanguage.Aseba);
    case "runProgram":
      return node().runProgram();
    case "setVariables":
      return node().setVariables(new Map(Object.entries(command.vars)));
    case "watchVariables":
      return watchNode(name, state, node(), "variables");
    case "watchEvents":
      return watchNode(name, state, node(), "events");
    case "watchVmState":
      return watchNode(name, state, node(), "vmState");
    case "watchGroup":
      return watchNode(name, state, node(), "group");
    case "watchScratchpads":
      return watchNode(name, state, node(), "scratchpads");
    case "groupSetVariables":
      return node().group.setVariables(new Map(Object.entries(command.vars)));
    case "groupEmitEvents":
      return node().group.emitEvents(new Map(Object.entries(command.events)));
    case "emitEvents":
      return node().emitEvents(new Map(Object.entries(command.events)));
    case "waitVariable": {
      const store = command.shared ? state.shared : state.variables;
      const key = `${command.node}/${command.name}`;
      const kind = command.shared ? "sharedVariables" : "variables";
      const check = () => (store.has(key) && same(store.get(key), command.value) ? { value: value(store.get(key)) } : null);
      return until(state, (e) => (e.event === kind ? check() : null), check);
    }
    case "waitEvent":
      return until(state, (e) =>
        e.event === "events" && e.node === command.node && e.events.has(command.name)
          ? { value: value(e.events.get(command.name)) } : null);
    case "waitScratchpad": {
      const check = () => (state.scratchpads.get(command.node) === command.text ? { text: command.text } : null);
      return until(state, (e) => (e.event === "scratchpad" ? check() : null), check);
    }
    case "close":
      client._socket?.close();
      clients.delete(name);
      return null;
    default:
      throw new Error(`unknown op ${command.op}`);
  }
}

function reply(id, outcome) {
  emit({ id, ...outcome });
}

const input = createInterface({ input: process.stdin });
input.on("line", (line) => {
  if (!line.trim()) return;
  let command;
  try {
    command = JSON.parse(line);
  } catch (error) {
    reply(null, { ok: false, error: `not JSON: ${error}`, code: null });
    return;
  }
  const timeoutMs = command.timeoutMs ?? 10000;
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${command.op} timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  Promise.race([Promise.resolve().then(() => run(command)), timeout])
    .then((result) => reply(command.id, { ok: true, result: value(result) }))
    .catch((error) => reply(command.id, {
      ok: false, error: error instanceof Error ? error.message : String(error),
      code: typeof error === "number" ? error : null,
    }))
    .finally(() => clearTimeout(timer));
});
input.on("close", () => {
  for (const state of clients.values()) state.client._socket?.close();
  setTimeout(() => process.exit(0), 50);
});
