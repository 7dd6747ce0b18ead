// Controls for the command types a device accepts. Any type gets a form generated from its
// `describe` schema; led, sound, rumble, Thymio LEDs and system sounds, the Wii Remote's
// TimedSwitch, a simulated device's buttons (hwgateway/SimButton) and a binding's pause and resume get
// friendlier widgets. Every command shows its result or its error code and message.

import { constantsWithPrefix, h, shortType } from "./dom.js";
import { effectOf, holdsMeaning } from "./effects.js";
import { commandForm, hexToRgb } from "./fields.js";

const HOLD_PERIOD_MS = 100;
/** Each held command expires quickly, so a stalled page cannot leave a motor running. */
const HOLD_TIMEOUT_S = 1;

const TITLES = {
  led: "LED",
  sound: "Sound",
  rumble: "Rumble",
  "hwgateway/SimButton": "Press a button",
  "hwgateway/BindingPause": "Pause the binding",
  "hwgateway/BindingResume": "Resume the binding",
};

/** The control for command `type` on `device`; `send(type, data, timeout_s)` resolves to a result. */
export function createControl({ device, type, described, send }) {
  const output = h("output", { class: "result", dataset: { state: "idle" } }, "–");
  const run = (data, timeout_s) => runCommand(send, type, data, output, timeout_s);
  const make = FRIENDLY[type] || genericControl;
  const effect = effectOf(type, device);
  const reason = h("p", { class: "not-allowed", hidden: true });
  // A fieldset, so what this token may not command is disabled in one place (see app.js).
  return h(
    "fieldset",
    { class: "control", dataset: { command: type } },
    h("h4", {}, TITLES[type] || shortType(type), h("small", {}, type)),
    described?.doc ? h("p", { class: "help" }, described.doc.split("\n\n")[0]) : null,
    effect ? h("p", { class: "effect" }, effect) : null,
    reason,
    make({ device, type, described, run, output }),
    output,
  );
}

/** Disable or enable one control, saying why (`because` "" enables it). */
export function allowControl(control, because) {
  control.disabled = Boolean(because);
  const reason = control.querySelector(".not-allowed");
  reason.hidden = !because;
  reason.textContent = because;
}

async function runCommand(send, type, data, output, timeout_s) {
  const started = performance.now();
  show(output, "pending", "sending…");
  const result = await send(type, data, timeout_s);
  const ms = Math.round(performance.now() - started);
  if (result.ok) {
    const detail = Object.keys(result.data || {}).length ? ` · ${JSON.stringify(result.data)}` : "";
    show(output, "ok", `✓ ok in ${ms} ms${detail}`);
  } else {
    show(output, "error", `✗ ${result.error.code}: ${sentence(result.error.message)}`);
  }
  return result;
}

/** An error message as a sentence, ending with a full stop (the gateway's messages are clauses). */
export function sentence(text) {
  const trimmed = String(text || "").trim();
  if (!trimmed) return "no reason given.";
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

function show(output, state, text) {
  output.dataset.state = state;
  output.textContent = text;
}

// -- small inputs ----------------------------------------------------------------------------------

function button(text, onclick, attrs = {}) {
  return h("button", { type: "button", onclick, ...attrs }, text);
}

function labelled(text, input) {
  return h("label", { class: "input" }, h("span", {}, text), input);
}

/** A range slider with its value shown beside it; `get()` reads the number. */
function slider(text, { value = 0.5, min = 0, max = 1, step = 0.01 } = {}) {
  const input = h("input", { type: "range", min, max, step, value: String(value) });
  const shown = h("span", { class: "num" }, String(value));
  input.addEventListener("input", () => (shown.textContent = input.value));
  return {
    el: h("label", { class: "input slider" }, h("span", {}, text), input, shown),
    get: () => Number(input.value),
  };
}

function numberInput(attrs) {
  return h("input", { type: "number", class: "number", ...attrs, value: String(attrs.value ?? 0) });
}


// -- friendly controls ---------------------------------------------------------------------------

const PRESETS = [
  ["red", [1, 0, 0]],
  ["green", [0, 1, 0]],
  ["blue", [0, 0, 1]],
  ["white", [1, 1, 1]],
  ["off", [0, 0, 0]],
];

function ledControl({ device, run }) {
  const count = Number(device.capabilities?.leds) || 0;
  const which = h(
    "select",
    { "aria-label": "which LED" },
    h("option", { value: "-1" }, count > 1 ? "all LEDs" : "LED"),
    count > 1 ? [...Array(count).keys()].map((i) => h("option", { value: String(i) }, `LED ${i}`)) : null,
  );
  const picker = h("input", { type: "color", value: "#ff8800", "aria-label": "colour" });
  const send = (rgb) => run({ index: Number(which.value), rgb });
  return h(
    "div",
    { class: "row" },
    which,
    PRESETS.map(([name, rgb]) =>
      button(h("i", { class: "dot" }), () => send(rgb), {
        class: "preset",
        title: name,
        "aria-label": name,
        dataset: { preset: name },
      }),
    ),
    picker,
    button("Set", () => send(hexToRgb(picker.value))),
  );
}

function soundControl({ run }) {
  const frequency = numberInput({ min: 0, max: 20000, step: 1, value: 440 });
  const duration = numberInput({ min: 0, max: 60, step: 0.1, value: 0.5 });
  const volume = slider("volume", { value: 1 });
  return h(
    "div",
    {},
    h("div", { class: "row" }, labelled("Hz", frequency), labelled("s", duration), volume.el),
    h(
      "div",
      { class: "row" },
      button("Play", () =>
        run({ frequency_hz: Number(frequency.value), duration_s: Number(duration.value), volume: volume.get() }),
      ),
      button("Stop", () => run({ frequency_hz: 0, duration_s: 0, volume: 0 })),
    ),
  );
}

function rumbleControl({ run }) {
  const low = slider("low", { value: 0.6 });
  const high = slider("high", { value: 0.6 });
  const duration = numberInput({ min: 0, max: 60, step: 0.1, value: 0.5 });
  return h(
    "div",
    {},
    h("div", { class: "row" }, low.el, high.el),
    h(
      "div",
      { class: "row" },
      labelled("s", duration),
      button("Rumble", () => run({ low: low.get(), high: high.get(), duration_s: Number(duration.value) })),
      button("Stop", () => run({ low: 0, high: 0, duration_s: 0 })),
    ),
  );
}

// LEDs per group on a Thymio II: leds.circle 8, leds.prox.h 8, leds.buttons 4, leds.prox.v 2,
// leds.temperature 2, leds.sound 1, leds.rc 1.
const THYMIO_GROUP_SIZES = { CIRCLE: 8, PROXIMITY: 8, BUTTONS: 4, GROUND: 2, TEMPERATURE: 2, MICROPHONE: 1, REMOTE: 1 };

function thymioLedControl({ described, run }) {
  const groups = Object.entries(described?.constants || {}).sort((a, b) => a[1] - b[1]);
  const group = h(
    "select",
    { "aria-label": "LED group" },
    groups.map(([name, id]) => h("option", { value: String(id) }, name.toLowerCase())),
  );
  const slots = h("div", { class: "row" });
  let sliders = [];
  const layout = () => {
    const name = groups.find(([, id]) => String(id) === group.value)?.[0];
    const maxItems = described?.schema?.properties?.values?.maxItems ?? 8;
    sliders = [...Array(Math.min(THYMIO_GROUP_SIZES[name] ?? maxItems, maxItems)).keys()].map((i) =>
      slider(String(i), { value: 1 }),
    );
    slots.replaceChildren(...sliders.map((s) => s.el));
  };
  group.addEventListener("change", layout);
  layout();
  const send = (values) => run({ id: Number(group.value), values });
  return h(
    "div",
    {},
    h(
      "div",
      { class: "row" },
      group,
      button("All on", () => send(sliders.map(() => 1))),
      button("All off", () => send(sliders.map(() => 0))),
      button("Send", () => send(sliders.map((s) => s.get()))),
    ),
    slots,
  );
}

function systemSoundControl({ described, run }) {
  const sounds = Object.entries(described?.constants || {}).sort((a, b) => a[1] - b[1]);
  return h(
    "div",
    { class: "row" },
    sounds.map(([name, value]) =>
      button(name.toLowerCase().replace(/_/g, " "), () => run({ sound: value }), { class: value < 0 ? "stop" : null }),
    ),
  );
}

function timedSwitchControl({ described, run }) {
  const c = described?.constants || {};
  const on = c.ON ?? 1;
  const off = c.OFF ?? 0;
  const repeat = c.REPEAT ?? -1;
  const forever = c.FOREVER ?? -1;
  // FOREVER is a value of num_cycles, not a switch mode; ON comes first.
  const modes = constantsWithPrefix(described, "")
    .filter(([name]) => name !== "FOREVER")
    .reverse();
  const mode = h(
    "select",
    { "aria-label": "mode" },
    modes.map(([name, value]) => h("option", { value: String(value) }, name.toLowerCase())),
  );
  const cycles = numberInput({ step: 1, value: forever, title: `${forever}: forever` });
  const pattern = h("input", { type: "text", value: "0.25, 0.25", "aria-label": "pulse pattern (s)", size: 10 });
  const parsePattern = () =>
    pattern.value
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map(Number);
  return h(
    "div",
    {},
    h(
      "div",
      { class: "row" },
      button("On", () => run({ switch_mode: on, num_cycles: 0, pulse_pattern: [] })),
      button("Off", () => run({ switch_mode: off, num_cycles: 0, pulse_pattern: [] })),
      button("Blink", () => run({ switch_mode: repeat, num_cycles: forever, pulse_pattern: [0.25, 0.25] })),
    ),
    h(
      "div",
      { class: "row" },
      mode,
      labelled("cycles", cycles),
      labelled("pattern s", pattern),
      button("Send", () =>
        run({ switch_mode: Number(mode.value), num_cycles: Number(cycles.value), pulse_pattern: parsePattern() }),
      ),
    ),
  );
}

/** hwgateway/WiimoteLeds: one choice per LED, numbered 1–4 as printed on the remote. */
function wiimoteLedsControl({ run }) {
  // wiimote/TimedSwitch's constants (hwgateway/WiimoteLeds nests them, so describe lists none here).
  const switches = {
    leave: { switch_mode: -2, num_cycles: 0, pulse_pattern: [] },
    on: { switch_mode: 1, num_cycles: 0, pulse_pattern: [] },
    off: { switch_mode: 0, num_cycles: 0, pulse_pattern: [] },
    blink: { switch_mode: -1, num_cycles: -1, pulse_pattern: [0.25, 0.25] },
  };
  const choices = [1, 2, 3, 4].map((number) =>
    h(
      "select",
      { "aria-label": `LED ${number}`, dataset: { led: String(number) } },
      Object.keys(switches).map((name) => h("option", { value: name }, name)),
    ),
  );
  const all = (name) => run({ leds: choices.map(() => switches[name]) });
  return h(
    "div",
    {},
    h(
      "div",
      { class: "row leds-row" },
      choices.map((select, index) => labelled(`LED ${index + 1}`, select)),
      button("Send", () => run({ leds: choices.map((select) => switches[select.value]) })),
    ),
    h("div", { class: "row" }, button("All on", () => all("on")), button("All off", () => all("off"))),
  );
}

/** A simulated device's buttons (its `sim_buttons` capability), each pressed for half a second. */
function simButtonControl(args) {
  const { device, run } = args;
  const names = device?.capabilities?.sim_buttons || [];
  if (!names.length) return genericControl(args);
  return h(
    "div",
    { class: "row" },
    names.map((name) => button(name, () => run({ button: name, pressed_s: 0.5 }), { dataset: { button: name } })),
  );
}

/** A binding's pause (its safe output, then nothing until resumed) and resume (after a pause or STOP ALL). */
function bindingControl(label, action) {
  return ({ run }) => h("div", { class: "row" }, button(label, () => run({}), { dataset: { action } }));
}

/** hwgateway/AsebaVMControl: one button per VM command its doc names (`run`, `stop`, ...). */
function vmControl(args) {
  const { described, run } = args;
  const words = [...(described?.doc || "").matchAll(/`([a-z]+)`/g)].map((m) => m[1]).filter((w) => w !== "command");
  if (!words.length) return genericControl(args);
  return h(
    "div",
    { class: "row" },
    words.map((word) => button(word, () => run({ command: word }), { dataset: { vm: word }, class: word === "stop" ? "stop" : null })),
  );
}

const FRIENDLY = {
  "hwgateway/AsebaVMControl": vmControl,
  "hwgateway/BindingPause": bindingControl("Pause", "pause"),
  "hwgateway/BindingResume": bindingControl("Resume", "resume"),
  "hwgateway/SimButton": simButtonControl,
  "hwgateway/WiimoteLeds": wiimoteLedsControl,
  led: ledControl,
  sound: soundControl,
  rumble: rumbleControl,
  "thymio_msgs/Led": thymioLedControl,
  "thymio_msgs/SystemSound": systemSoundControl,
  "wiimote/TimedSwitch": timedSwitchControl,
};

// -- the generic form ------------------------------------------------------------------------------

function genericControl({ device, type, described, run, output }) {
  const form = commandForm({ device, described });
  const read = () => {
    try {
      return form.get();
    } catch (error) {
      show(output, "error", `✗ not sent: ${error.message}`);
      return null;
    }
  };
  return h(
    "div",
    {},
    form.el,
    h(
      "div",
      { class: "row" },
      button("Send", () => {
        const data = read();
        if (data) run(data);
      }),
      holdsMeaning(type) ? holdToDrive(read, run, output) : null,
    ),
  );
}

// -- hold to drive -----------------------------------------------------------------------------------

/**
 * Sends the form's command every HOLD_PERIOD_MS while pressed (pointer or keyboard), and on release
 * sends it once more with its amounts zeroed. The gateway's lease also stops the device if this page
 * goes away mid-drive.
 */
function holdToDrive(read, run, output) {
  let timer = null;
  let sent = 0;
  let data = null;
  const el = button("Hold to drive", null, { class: "hold" });
  const start = () => {
    if (timer) return;
    data = read();
    if (!data) return;
    sent = 0;
    el.classList.add("active");
    const tick = () => {
      sent += 1;
      run(data, HOLD_TIMEOUT_S).then(() => timer && (output.textContent += ` · ${sent} sent while held`));
    };
    tick();
    timer = setInterval(tick, HOLD_PERIOD_MS);
  };
  const stop = () => {
    if (!timer) return;
    clearInterval(timer);
    timer = null;
    el.classList.remove("active");
    run(zeroed(data), HOLD_TIMEOUT_S).then(() => (output.textContent += ` · released after ${sent} sends: stop sent`));
  };
  el.addEventListener("pointerdown", (event) => {
    el.setPointerCapture(event.pointerId);
    start();
  });
  for (const name of ["pointerup", "pointercancel", "lostpointercapture", "blur"]) el.addEventListener(name, stop);
  el.addEventListener("keydown", (event) => (event.key === " " || event.key === "Enter") && !event.repeat && start());
  el.addEventListener("keyup", (event) => (event.key === " " || event.key === "Enter") && stop());
  document.addEventListener("visibilitychange", () => document.hidden && stop());
  return el;
}

/** The stop command: every amount set to 0; ids, indexes, flags and modes kept. */
function zeroed(value, key = "") {
  if (Array.isArray(value)) return value.map((v) => zeroed(v, key));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, zeroed(v, k)]));
  if (typeof value === "number" && !/(^|_)(id|index|flags|mode)$/i.test(key)) return 0;
  return value;
}
