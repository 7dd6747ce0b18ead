// The dashboard's admin tools: add a device (scan), pair a Bluetooth device, reload the configuration.
// Each is an admin op of the public protocol (docs/protocol.md: scan, pair, reload); a token of another
// role gets the gateway's `unauthorized`, shown as it comes. Nothing here writes the config file: a scan
// and a pairing give the [devices.<id>] tables to paste into it, and Reload applies the file as it is.

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
  return h(
    "details",
    { class: "admin", id: "admin" },
    h("summary", {}, "Add device · Pair · Reload (admin)"),
    h("div", { class: "admin-tools" }, scan, pair, reload),
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
      details.replaceChildren(...result.error.message.split("\n").map((line) => h("li", {}, line)));
      return;
    }
    const report = result.data;
    const lines = [
      ["started", report.added],
      ["stopped", report.removed],
      ["restarted", report.restarted],
      ["started bindings", report.bindings_added],
      ["ended bindings", report.bindings_removed],
      ["restarted bindings", report.bindings_restarted],
      ["applied", report.applied],
      ["needs a restart (kept as it runs)", report.restart_needed],
      ["warning", report.warnings],
    ].filter(([, items]) => items.length);
    show(output, "ok", lines.length ? "reloaded" : "reloaded: nothing changed");
    details.replaceChildren(...lines.map(([label, items]) => h("li", {}, `${label}: ${items.join(", ")}`)));
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
