// The npm Foxglove WebSocket client (@foxglove/ws-protocol, unchanged) run through a plan; prints one
// JSON report of everything the server sent, for the Python tests to check.
//   node client.mjs <ws url> <subprotocol> '<plan JSON>'
// plan: {subscribe: [topics], messages: n per topic (or {topic: n}), publish: [{topic, schemaName, data}],
//        services: [{name, request}], getParameters: [names] | null, setParameters: [{name, value}] | null,
//        raw: [base64 binary frames sent as they are], rawText: [strings sent as they are], timeoutMs}
import pkg from "@foxglove/ws-protocol";
import WebSocket from "ws";

const { FoxgloveClient } = pkg;
const [url, subprotocol, planText] = process.argv.slice(2);
const plan = JSON.parse(planText);
const timeoutMs = plan.timeoutMs ?? 8000;
const wanted = (topic) => (typeof plan.messages === "object" ? plan.messages[topic] : plan.messages) ?? 3;
const report = {
  subprotocol: null, serverInfo: null, channels: [], services: [], messages: {}, serviceResponses: [],
  serviceFailures: [], parameterValues: [], statuses: [], unadvertised: [], errors: [], closed: null,
};
const decoder = new TextDecoder();
const ws = new WebSocket(url, [subprotocol]);
const client = new FoxgloveClient({ ws });
const pending = new Set();
let finished = false;

function finish() {
  if (finished) return;
  finished = true;
  client.close();
  // Exit only once the whole report is out: a pipe takes it in 64 KiB pieces, and exit drops the rest.
  process.stdout.write(JSON.stringify(report) + "\n", () => process.exit(0));
}
const timer = setTimeout(() => { report.errors.push(`timeout waiting for ${[...pending].join(", ")}`); finish(); }, timeoutMs);
function done(what) {
  pending.delete(what);
  if (pending.size === 0) { clearTimeout(timer); setTimeout(finish, plan.lingerMs ?? 300); }
}

client.on("open", () => { report.subprotocol = ws.protocol; });
client.on("error", (error) => report.errors.push(String(error)));
client.on("close", (event) => { report.closed = { code: event.code, reason: String(event.reason ?? "") }; finish(); });
client.on("status", (status) => report.statuses.push(status));
client.on("unadvertise", (ids) => report.unadvertised.push(...ids));
client.on("parameterValues", (values) => { report.parameterValues.push(values); done(`parameters:${values.id}`); });

const subscriptions = new Map();
client.on("serverInfo", (info) => {
  report.serverInfo = info;
  for (const name of plan.services ?? []) pending.add(`service:${name.name}`);
  if (plan.getParameters) pending.add("parameters:get-1");
  if (plan.setParameters) pending.add("parameters:set-1");
  for (const topic of plan.subscribe ?? []) pending.add(`topic:${topic}`);
  if (pending.size === 0) done("nothing");
  if (plan.getParameters) client.getParameters(plan.getParameters, "get-1");
  if (plan.setParameters) client.setParameters(plan.setParameters, "set-1");
  for (const text of plan.rawText ?? []) ws.send(text);
  for (const frame of plan.raw ?? []) ws.send(Buffer.from(frame, "base64"));
  for (const publish of plan.publish ?? []) {
    const channel = client.advertise({ topic: publish.topic, encoding: "json", schemaName: publish.schemaName });
    client.sendMessage(channel, new TextEncoder().encode(JSON.stringify(publish.data)));
  }
});

client.on("advertise", (channels) => {
  for (const channel of channels) {
    report.channels.push(channel);
    if ((plan.subscribe ?? []).includes(channel.topic) && ![...subscriptions.values()].includes(channel.topic)) {
      const id = client.subscribe(channel.id);
      subscriptions.set(id, channel.topic);
      report.messages[channel.topic] = [];
    }
  }
});

client.on("message", ({ subscriptionId, timestamp, data }) => {
  const topic = subscriptions.get(subscriptionId);
  const received = report.messages[topic];
  if (received === undefined) { report.errors.push(`message for unknown subscription ${subscriptionId}`); return; }
  if (received.length >= wanted(topic)) return;
  const text = decoder.decode(data);
  received.push({ subscriptionId, timestamp: timestamp.toString(), byteLength: data.byteLength, data: JSON.parse(text) });
  if (received.length === wanted(topic)) done(`topic:${topic}`);
});

const calls = new Map();
client.on("advertiseServices", (services) => {
  for (const service of services) {
    report.services.push(service);
    const planned = (plan.services ?? []).find((entry) => entry.name === service.name);
    if (planned === undefined) continue;
    const callId = calls.size + 1;
    calls.set(callId, service.name);
    const payload = new TextEncoder().encode(JSON.stringify(planned.request));
    client.sendServiceCallRequest({ serviceId: service.id, callId, encoding: "json", data: payload });
  }
});
client.on("serviceCallResponse", (response) => {
  const name = calls.get(response.callId);
  report.serviceResponses.push({
    name, serviceId: response.serviceId, callId: response.callId, encoding: response.encoding,
    data: JSON.parse(decoder.decode(response.data)),
  });
  done(`service:${name}`);
});
client.on("serviceCallFailure", (failure) => {
  report.serviceFailures.push({ name: calls.get(failure.callId), ...failure });
  done(`service:${calls.get(failure.callId)}`);
});
