// The dashboard's admin tools: add a device (scan), pair a Bluetooth device, edit a device's options,
// reload the configuration. Each is an admin op of the public protocol (docs/protocol.md: scan, pair,
// device_options, configure_device, reload); a token of another role gets the gateway's `unauthorized`,
// shown as it comes. Nothing here writes the config file: a scan and a pairing give the [devices.<id>]
// tables to paste into it, Reload applies the file as it is, and an options edit is kept by the gateway
// in its own overrides file ([server] device_overrides) and applied through a reload.

import { h } from "./dom.js";

/** How long past its own window an op may take to answer (a reload stops devices through their safe state). */
const EXTRA_WAIT_MS = 30000;
const SCAN_DEFAULT_S = 4;
const PAIR_DEFAULT_S = 30;

/** The admin panel; `onReloaded()` runs after a reload changed what runs (the page lists the devices again). */
export function createAdmin(connection, { onReloaded }) {
  const scan = scanTool(connection);
  const pair = pairTool(connection);
  const reload = reloadTool(connection, onReloaded);
  const options = optionsTool(connection, onReloaded);
  return h(
    "details",
    { class: "admin", id: "admin" },
    h("summary", {}, "Add device · Pair · Options · Reload (admin)"),
    h("div", { class: "admin-tools" }, scan, pair, options, reload),
  );
}

function resultOutput() {
  return h("output", { class: "result", dataset: { state: "idle" }, "aria-live": "polite" });
}

function show(output, state, text) {
  output.dataset.state = state;
  output.textContent = text;
}

function failed(output, result) {
  show(output, "error", `${result.error.code}: ${result.error.message}`);
}

function configBlock(text) {
  if (!text) return null;
  const pre = h("pre", { class: "config" }, text);
  const copy = h("button", { type: "button", class: "copy" }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      copy.textContent = "Copied";
    } catch {
      copy.textContent = "Select and copy by hand";
    }
  });
  return h("div", { class: "config-box" }, h("p", {}, "Paste into the config file, then Reload:"), pre, copy);
}

// -- Add device: scan --------------------------------------------------------------------------------

function scanTool(connection) {
  const seconds = h("input", { type: "number", min: "0.5", max: "60", step: "0.5", value: SCAN_DEFAULT_S });
  const button = h("button", { type: "button" }, "Add device (scan)");
  const output = resultOutput();
  const found = h("div", { class: "findings" });
  button.addEventListener("click", async () => {
    const timeout_s = Math.min(60, Math.max(0.5, Number(seconds.value) || SCAN_DEFAULT_S));
    button.disabled = true;
    found.replaceChildren();
    show(output, "pending", `looking for ${timeout_s} s…`);
    const result = await connection.request("scan", { timeout_s }, timeout_s * 1000 + EXTRA_WAIT_MS);
    button.disabled = false;
    if (!result.ok) return failed(output, result);
    const { findings, skipped, config } = result.data;
    show(output, "ok", findings.length ? `found ${findings.length}` : "nothing new found");
    found.replaceChildren(
      h(
        "ul",
        {},
        findings.map((f) =>
          h(
            "li",
            { dataset: { finding: f.id } },
            h("b", {}, f.id),
            ` ${f.summary}`,
            f.notes.map((note) => h("div", { class: "note" }, note)),
          ),
        ),
        skipped.map((s) => h("li", { class: "skipped" }, `${s.family}: ${s.reason}`)),
      ),
      configBlock(config) ?? "",
    );
  });
  return h(
    "section",
    { class: "admin-tool", dataset: { tool: "scan" } },
    h("h3", {}, "Add device"),
    h("p", { class: "hint" }, "Plug in and switch on the device, then scan: each finding comes with its config."),
    h("label", {}, "seconds ", seconds),
    button,
    output,
    found,
  );
}

// -- Pair: a Wii Remote by its sync button, a BLE device by its address -----------------------------

function pairTool(connection) {
  const kind = h(
    "select",
    {},
    h("option", { value: "wiimote" }, "Wii Remote"),
    h("option", { value: "ble" }, "Bluetooth LE device"),
  );
  const address = h("input", { type: "text", placeholder: "address (optional for a Wii Remote)", spellcheck: "false" });
  const button = h("button", { type: "button" }, "Pair");
  const output = resultOutput();
  const steps = h("ol", { class: "steps" });
  const config = h("div");
  button.addEventListener("click", async () => {
    button.disabled = true;
    steps.replaceChildren();
    config.replaceChildren();
    const wiimote = kind.value === "wiimote";
    show(
      output,
      "pending",
      wiimote
        ? `pairing for ${PAIR_DEFAULT_S} s: press the red sync button of the Wii Remote now`
        : `pairing for ${PAIR_DEFAULT_S} s: put the device in pairing mode`,
    );
    const fields = { kind: kind.value, address: address.value.trim(), timeout_s: PAIR_DEFAULT_S };
    const result = await connection.request("pair", fields, PAIR_DEFAULT_S * 1000 + EXTRA_WAIT_MS);
    button.disabled = false;
    if (!result.ok) return failed(output, result);
    const outcome = result.data;
    show(output, outcome.outcome === "paired" ? "ok" : "error", `${outcome.outcome.replace("_", " ")}: ${outcome.message}`);
    steps.replaceChildren(...outcome.steps.map((step) => h("li", {}, step)));
    config.replaceChildren(configBlock(outcome.config) ?? "");
  });
  return h(
    "section",
    { class: "admin-tool", dataset: { tool: "pair" } },
    h("h3", {}, "Pair"),
    h("p", { class: "hint" }, "A Wii Remote pairs once by its red sync button and then reconnects by itself."),
    kind,
    address,
    button,
    output,
    steps,
    config,
  );
}

// -- Reload: apply the configuration file without a restart ------------------------------------------

/** A reload's report (the `reload` and `configure_device` ops' result) as list items, what changed only. */
function reportLines(report) {
  return [
    ["started", report.added],
    ["stopped", report.removed],
    ["restarted", report.restarted],
    ["started bindings", report.bindings_added],
    ["ended bindings", report.bindings_removed],
    ["restarted bindings", report.bindings_restarted],
    ["applied", report.applied],
    ["needs a restart (kept as it runs)", report.restart_needed],
    ["warning", report.warnings],
  ]
    .filter(([, items]) => items.length)
    .map(([label, items]) => h("li", {}, `${label}: ${items.join(", ")}`));
}

/** Every problem of a refused op, one per line. */
function problemLines(result) {
  return result.error.message.split("\n").map((line) => h("li", {}, line));
}

function reloadTool(connection, onReloaded) {
  const button = h("button", { type: "button" }, "Reload config");
  const output = resultOutput();
  const details = h("ul", { class: "reload-report" });
  button.addEventListener("click", async () => {
    button.disabled = true;
    details.replaceChildren();
    show(output, "pending", "reloading…");
    const result = await connection.request("reload", {}, EXTRA_WAIT_MS);
    button.disabled = false;
    if (!result.ok) {
      failed(output, result);
      // An invalid file: every problem on a line of its own, nothing changed.
      details.replaceChildren(...problemLines(result));
      return;
    }
    const lines = reportLines(result.data);
    show(output, "ok", lines.length ? "reloaded" : "reloaded: nothing changed");
    details.replaceChildren(...lines);
    if (lines.length) onReloaded();
  });
  return h(
    "section",
    { class: "admin-tool", dataset: { tool: "reload" } },
    h("h3", {}, "Reload"),
    h("p", { class: "hint" }, "Apply the config file as it is now: only what changed starts or stops."),
    button,
    output,
    details,
  );
}

// -- Options: edit a configured device's options, applied through a reload ---------------------------

/** An option's value as typed: JSON (a number, true, a list...), else the text itself as a string. */
function parseValue(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function optionsTool(connection, onReloaded) {
  const device = h("select", { class: "options-device", "aria-label": "device" });
  const showButton = h("button", { type: "button", class: "options-show" }, "Show options");
  const apply = h("button", { type: "button", class: "options-apply", disabled: true }, "Apply");
  const output = resultOutput();
  const rows = h("div", { class: "options-rows" });
  const details = h("ul", { class: "reload-report" });
  /** What the rows were shown with: name -> {text, input, reset}. */
  let shown = new Map();
  /** Counts the requests for options and the changes of device: only the newest answer is shown. */
  let asking = 0;

  async function listDevices() {
    const result = await connection.request("list_devices", {});
    if (!result.ok) return failed(output, result);
    const chosen = device.value;
    device.replaceChildren(...result.data.devices.map((d) => h("option", { value: d.id }, `${d.id} (${d.kind})`)));
    if (chosen) device.value = chosen;
  }

  async function showOptions() {
    const asked = device.value;
    const mine = ++asking;
    const result = await connection.request("device_options", { device: asked });
    // An answer overtaken by another request or by a change of device is dropped: shown, it would put
    // one device's values under another's name, and Apply would send them to the other.
    if (mine !== asking) return;
    if (!result.ok) {
      rows.replaceChildren();
      delete rows.dataset.device;
      apply.disabled = true;
      return failed(output, result);
    }
    const { options, secret, overridden, file } = result.data;
    shown = new Map();
    rows.replaceChildren(
      ...Object.entries(options).map(([name, value]) => {
        const hidden = secret.includes(name);
        const text = hidden ? "" : JSON.stringify(value);
        const input = h("input", {
          type: hidden ? "password" : "text",
          value: text,
          spellcheck: "false",
          placeholder: hidden ? "hidden: type a new value to replace it" : "",
          dataset: { option: name },
        });
        const entry = { text, input, reset: false };
        shown.set(name, entry);
        const reset = overridden.includes(name)
          ? h("button", { type: "button", class: "option-reset", title: "back to the config file's value" }, "file value")
          : null;
        reset?.addEventListener("click", () => {
          entry.reset = !entry.reset;
          reset.setAttribute("aria-pressed", String(entry.reset));
        });
        return h(
          "label",
          { class: "option-row", dataset: { overridden: String(overridden.includes(name)) } },
          h("span", { class: "key" }, name),
          input,
          reset,
        );
      }),
    );
    rows.dataset.device = asked;
    apply.disabled = false;
    show(output, "ok", `${asked}: edits are kept in ${file}`);
  }

  async function applyChanges() {
    const changes = {};
    for (const [name, entry] of shown) {
      if (entry.reset) changes[name] = null;
      else if (entry.input.value !== entry.text) changes[name] = parseValue(entry.input.value);
    }
    if (!Object.keys(changes).length) return show(output, "idle", "nothing changed");
    apply.disabled = true;
    details.replaceChildren();
    show(output, "pending", "checking and applying…");
    const target = rows.dataset.device;
    const result = await connection.request("configure_device", { device: target, options: changes }, EXTRA_WAIT_MS);
    apply.disabled = false;
    if (!result.ok) {
      failed(output, result);
      details.replaceChildren(...problemLines(result));
      return;
    }
    onReloaded();
    await showOptions(); // the values as they now run, and which are overridden
    show(output, "ok", "applied");
    details.replaceChildren(...reportLines(result.data));
  }

  device.addEventListener("focus", listDevices, { once: true });
  device.addEventListener("change", () => {
    asking += 1; // an answer still on its way is for the device no longer chosen
    rows.replaceChildren();
    delete rows.dataset.device;
    apply.disabled = true;
  });
  showButton.addEventListener("click", async () => {
    details.replaceChildren();
    if (!device.value) await listDevices();
    await showOptions();
  });
  apply.addEventListener("click", applyChanges);
  return h(
    "section",
    { class: "admin-tool", dataset: { tool: "options" } },
    h("h3", {}, "Device options"),
    h(
      "p",
      { class: "hint" },
      "Change a configured device's options: the whole configuration is checked first, then only that " +
        "device restarts, through its safe state. Values are JSON (numbers, true, \"text\", [lists]).",
    ),
    h("div", { class: "row" }, device, showButton),
    rows,
    apply,
    output,
    details,
  );
}
