// Controls for the command types a device accepts. Any type gets a form generated from its
// `describe` schema; led, sound, rumble, Thymio LEDs and system sounds, the Wii Remote's
// TimedSwitch, a simulated device's buttons (hwgateway/SimButton) and a binding's pause and resume get
// friendlier widgets. Every command shows its result or its error code and message.

import { COLOUR_NAME, constantsWithPrefix, h, isTimeSchema, rgbScale, shortType } from "./dom.js";

/** Types that move something: sent repeatedly only while "hold to drive" is held (see holdToDrive). */
const DRIVE_TYPE = /motor|veloc|speed|twist|drive/i;
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
  return h(
    "div",
    { class: "control", dataset: { command: type } },
    h("h4", {}, TITLES[type] || shortType(type), h("small", {}, type)),
    make({ device, type, described, run, output }),
    output,
  );
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
    show(output, "error", `✗ ${result.error.code}: ${result.error.message}`);
  }
  return result;
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

function hexToRgb(hex) {
  const value = parseInt(hex.slice(1), 16);
  return [(value >> 16) & 255, (value >> 8) & 255, value & 255].map((c) => Math.round((c / 255) * 1000) / 1000);
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

const FRIENDLY = {
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

function genericControl({ type, described, run, output }) {
  const schema = described?.schema || { type: "object", properties: {} };
  const form = formFor(schema, "");
  const read = () => {
    try {
      return form.get();
    } catch (error) {
      show(output, "error", `✗ not sent: ${error.message}`);
      return null;
    }
  };
  const constants = Object.entries(described?.constants || {});
  return h(
    "div",
    {},
    form.el,
    constants.length
      ? h("p", { class: "hint" }, "constants: ", constants.map(([n, v]) => `${n}=${v}`).join(", "))
      : null,
    h(
      "div",
      { class: "row" },
      button("Send", () => {
        const data = read();
        if (data) run(data);
      }),
      DRIVE_TYPE.test(type) ? holdToDrive(read, run, output) : null,
    ),
  );
}

/** Form inputs for `schema`: `{el, get()}`; `get` throws on input that cannot be read. */
function formFor(schema, key) {
  if (isTimeSchema(schema)) return secondsInput(key);
  const scale = COLOUR_NAME.test(key) ? rgbScale(schema) : 0;
  if (scale) return colourInput(key, (hex) => hexToRgb(hex).map((c) => (scale === 1 ? c : Math.round(c * scale))));
  switch (schema.type) {
    case "object":
      return objectForm(schema, key);
    case "array":
      return arrayInput(schema, key);
    case "boolean":
      return checkbox(key);
    case "integer":
      if (schema.enum) return enumInput(schema, key);
      // A 0xRRGGBB integer (the Kortex LED ring) is a colour.
      if (COLOUR_NAME.test(key) && schema.maximum === 0xffffff)
        return colourInput(key, (hex) => parseInt(hex.slice(1), 16));
      return numericInput(schema, key, 1);
    case "number":
      if (schema.minimum === 0 && schema.maximum === 1) {
        const s = slider(key, { value: 0 });
        return { el: s.el, get: s.get };
      }
      return numericInput(schema, key, "any");
    default:
      return textInput(key);
  }
}

function objectForm(schema, key) {
  const children = Object.entries(schema.properties || {}).map(([name, sub]) => [name, formFor(sub, name)]);
  const inner = children.map(([, child]) => child.el);
  const el = key ? h("fieldset", {}, h("legend", {}, key), inner) : h("div", { class: "form" }, inner);
  return { el, get: () => Object.fromEntries(children.map(([name, child]) => [name, child.get()])) };
}

function startValue(schema) {
  if (schema.minimum !== undefined && schema.minimum > 0) return schema.minimum;
  if (schema.maximum !== undefined && schema.maximum < 0) return schema.maximum;
  return 0;
}

function numericInput(schema, key, step) {
  const input = numberInput({ step, min: schema.minimum, max: schema.maximum, value: startValue(schema) });
  return {
    el: labelled(key, input),
    get() {
      const value = Number(input.value);
      if (input.value.trim() === "" || !Number.isFinite(value)) throw new Error(`${key}: not a number`);
      return value;
    },
  };
}

function enumInput(schema, key) {
  const select = h(
    "select",
    {},
    schema.enum.map((v) => h("option", { value: String(v), selected: v === 0 }, String(v))),
  );
  return { el: labelled(key, select), get: () => Number(select.value) };
}

function checkbox(key) {
  const input = h("input", { type: "checkbox" });
  return { el: labelled(key, input), get: () => input.checked };
}

function textInput(key) {
  const input = h("input", { type: "text" });
  return { el: labelled(key, input), get: () => input.value };
}

function colourInput(key, convert) {
  const input = h("input", { type: "color", value: "#000000" });
  return { el: labelled(key, input), get: () => convert(input.value) };
}

/** ROS Time/Duration as seconds. */
function secondsInput(key) {
  const input = numberInput({ min: 0, step: "any", value: 0 });
  return {
    el: labelled(`${key} (s)`, input),
    get() {
      const seconds = Math.max(Number(input.value) || 0, 0);
      const sec = Math.floor(seconds);
      return { sec, nanosec: Math.min(Math.round((seconds - sec) * 1e9), 999999999) };
    },
  };
}

function arrayInput(schema, key) {
  const item = schema.items || {};
  const scalar = ["number", "integer", "boolean"].includes(item.type);
  if (scalar && schema.minItems === schema.maxItems && schema.maxItems <= 16) {
    const inputs = [...Array(schema.maxItems).keys()].map((i) => formFor(item, `${key}[${i}]`));
    return {
      el: h(
        "div",
        { class: "array" },
        inputs.map((i) => i.el),
      ),
      get: () => inputs.map((i) => i.get()),
    };
  }
  if (scalar || item.type === "string") {
    const input = h("input", { type: "text", placeholder: "comma-separated" });
    const parse = (text) => {
      if (item.type === "string") return text;
      if (item.type === "boolean") return text === "true" || text === "1";
      const value = Number(text);
      if (!Number.isFinite(value)) throw new Error(`${key}: ${JSON.stringify(text)} is not a number`);
      return value;
    };
    return {
      el: labelled(key, input),
      get: () =>
        input.value
          .split(",")
          .map((s) => s.trim())
          .filter((s) => s !== "")
          .map(parse),
    };
  }
  // Arrays of structures are typed as JSON.
  const area = h("textarea", { rows: 2, placeholder: "JSON array", value: "[]" });
  return {
    el: labelled(key, area),
    get() {
      try {
        return JSON.parse(area.value || "[]");
      } catch (error) {
        throw new Error(`${key}: ${error.message}`);
      }
    },
  };
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
