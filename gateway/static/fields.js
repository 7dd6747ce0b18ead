// Typed inputs generated from a command's `describe` answer: its JSON Schema, its constants and its
// doc. Choices for enums and for the constants that name a field's values, checkboxes for bit fields
// and boolean lists, a grid for a matrix (the micro:bit's 5 × 5 LEDs), a multi-line editor for
// program source, and beside every number its unit and range. A field the doc mentions (`name` ...)
// gets that clause as its help.

import { COLOUR_NAME, h, isTimeSchema, rgbScale } from "./dom.js";

/** Units read from a field's name, as hwgateway names its fields (`duration_s`, `speed_percent`). */
const UNIT_SUFFIXES = [
  [/_s$/, "s"],
  [/_ms$/, "ms"],
  [/_us$/, "µs"],
  [/_hz$/, "Hz"],
  [/_deg$/, "°"],
  [/_rad$/, "rad"],
  [/_percent$/, "%"],
  [/_mm$/, "mm"],
  [/_m$/, "m"],
];
/** Units a doc names after "in" ("`period` in seconds"). */
const UNIT_WORDS = { seconds: "s", milliseconds: "ms", degrees: "°", percent: "%", LEDs: "LEDs", volts: "V" };
/** Integer fields that are bit masks: one checkbox per bit (the Kortex wrist has 8 digital outputs). */
const BIT_FIELD = /(^|_)(digital_outputs?_state|outputs_mask)$/;
const BIT_COUNT = 8;
/** String fields that hold a program: a multi-line editor. */
const SOURCE_FIELD = /^(source|script|program|code)$/;
/** Ranges wider than this are the wire type's limits, not the device's: not worth showing. */
const SHOWN_RANGE = 1e6;
/** LEGO hub ports, as printed on the hub (the hub's own list when it has reported one). */
const LEGO_PORTS = ["A", "B", "C", "D"];

/**
 * The inputs for a command: `{el, get()}`; `get` throws on input that cannot be read.
 * `context`: {device (list_devices entry), described (describe answer)}.
 */
export function commandForm(context) {
  const schema = context.described?.schema || { type: "object", properties: {} };
  const ctx = { ...context, help: fieldHelp(context.described), choices: constantChoices(context.described) };
  return formFor(schema, "", ctx);
}

/** `name` → the doc's clause about it: "`speed_percent` (-100..100; 0 holds)" → "(-100..100; 0 holds)". */
export function fieldHelp(described) {
  const doc = described?.doc || "";
  const fields = Object.keys(described?.schema?.properties || {});
  const help = {};
  for (const name of fields) {
    const at = doc.indexOf(`\`${name}\``);
    if (at < 0) continue;
    let depth = 0;
    let end = at + name.length + 2;
    for (; end < doc.length; end += 1) {
      const c = doc[end];
      if (c === "(") depth += 1;
      else if (c === ")") depth -= 1;
      else if (depth <= 0 && (c === "`" || c === ";" || c === "," || (c === "." && !/\d/.test(doc[end + 1] || ""))))
        break;
    }
    const clause = doc.slice(at + name.length + 2, end).trim();
    if (clause) help[name] = clause;
  }
  return help;
}

/**
 * Which constants name which integer field's values. A type's constants come in groups, each counting
 * from the lowest (LedGesture: OFF WAVE · RECT HARMONIC · CIRCLE PROXIMITY BUTTONS); each group goes to
 * the next field, in schema order, whose enum or range is exactly its values.
 */
export function constantChoices(described) {
  const entries = Object.entries(described?.constants || {}).filter(([, v]) => Number.isInteger(v));
  const groups = [];
  for (const [name, value] of entries) {
    const group = groups[groups.length - 1];
    if (group && value > group[group.length - 1][1]) group.push([name, value]);
    else groups.push([[name, value]]);
  }
  const choices = {};
  const fields = Object.entries(described?.schema?.properties || {}).filter(([, s]) => s.type === "integer");
  for (const group of groups) {
    const values = group.map(([, v]) => v);
    const fits = ([name, s]) =>
      !choices[name] &&
      (s.enum
        ? s.enum.length === values.length && s.enum.every((v) => values.includes(v))
        : s.minimum === values[0] && s.maximum === values[values.length - 1] && s.maximum - s.minimum + 1 === values.length);
    const field = fields.find(fits);
    if (field) choices[field[0]] = group;
  }
  return choices;
}

/** The unit of field `key`: from its name, the device (a Kortex analog output's mode) or the doc. */
export function unitOf(key, ctx = {}) {
  for (const [pattern, unit] of UNIT_SUFFIXES) if (pattern.test(key)) return unit;
  const analog = /^analog_output_(\w+_channel_\d)_value$/.exec(key);
  if (analog) {
    const mode = ctx.device?.capabilities?.analog_output_modes?.[analog[1]];
    return mode === "current" ? "mA" : mode === "voltage" ? "V" : "V or mA";
  }
  const word = /\bin (\w+)/.exec(ctx.help?.[key] || "");
  return word ? UNIT_WORDS[word[1]] || "" : "";
}

function formFor(schema, key, ctx) {
  if (isTimeSchema(schema)) return secondsInput(key, ctx);
  const scale = COLOUR_NAME.test(key) ? rgbScale(schema) : 0;
  if (scale) return colourInput(key, (hex) => hexToRgb(hex).map((c) => (scale === 1 ? c : Math.round(c * scale))));
  switch (schema.type) {
    case "object":
      return objectForm(schema, key, ctx);
    case "array":
      return arrayInput(schema, key, ctx);
    case "boolean":
      return checkbox(key, ctx);
    case "integer":
      if (ctx.choices?.[key]) return choiceInput(key, ctx.choices[key], ctx);
      if (schema.enum) return choiceInput(key, schema.enum.map((v) => [String(v), v]), ctx);
      if (BIT_FIELD.test(key)) return bitsInput(key, schema, ctx);
      // A 0xRRGGBB integer (the Kortex LED ring) is a colour.
      if (COLOUR_NAME.test(key) && schema.maximum === 0xffffff)
        return colourInput(key, (hex) => parseInt(hex.slice(1), 16));
      return numericInput(schema, key, 1, ctx);
    case "number":
      if (schema.minimum === 0 && schema.maximum === 1) return sliderInput(key, ctx);
      return numericInput(schema, key, "any", ctx);
    default:
      if (key === "port" && ctx.described?.type?.startsWith("hwgateway/Lego")) return portInput(key, ctx);
      if (SOURCE_FIELD.test(key)) return sourceInput(key, ctx);
      return textInput(key, ctx);
  }
}

// -- the pieces ----------------------------------------------------------------------------------------

/** A labelled field: its name, the input, then its unit and range; the doc's clause as help. */
function field(key, input, ctx, extra = {}) {
  const help = ctx.help?.[key];
  return h(
    "label",
    { class: `input${extra.class ? ` ${extra.class}` : ""}`, title: help || null, dataset: { field: key } },
    h("span", { class: "name" }, key),
    input,
    extra.meta ? h("span", { class: "meta" }, extra.meta) : null,
    help && extra.showHelp ? h("small", { class: "field-help" }, help) : null,
  );
}

function rangeText(schema, unit) {
  const { minimum: min, maximum: max } = schema;
  const shown = min !== undefined && max !== undefined && Math.abs(min) < SHOWN_RANGE && Math.abs(max) < SHOWN_RANGE;
  const range = shown ? `${min} … ${max}` : "";
  return [unit, range].filter(Boolean).join(" · ");
}

function objectForm(schema, key, ctx) {
  const children = Object.entries(schema.properties || {}).map(([name, sub]) => [name, formFor(sub, name, ctx)]);
  const inner = children.map(([, child]) => child.el);
  const el = key ? h("fieldset", {}, h("legend", {}, key), inner) : h("div", { class: "form" }, inner);
  return { el, get: () => Object.fromEntries(children.map(([name, child]) => [name, child.get()])) };
}

function startValue(schema) {
  if (schema.minimum !== undefined && schema.minimum > 0) return schema.minimum;
  if (schema.maximum !== undefined && schema.maximum < 0) return schema.maximum;
  return 0;
}

function numericInput(schema, key, step, ctx) {
  const input = h("input", {
    type: "number",
    class: "number",
    step,
    min: schema.minimum,
    max: schema.maximum,
    value: String(startValue(schema)),
  });
  return {
    el: field(key, input, ctx, { meta: rangeText(schema, unitOf(key, ctx)) }),
    get() {
      const value = Number(input.value);
      if (input.value.trim() === "" || !Number.isFinite(value)) throw new Error(`${key}: not a number`);
      return value;
    },
  };
}

function sliderInput(key, ctx) {
  const input = h("input", { type: "range", min: 0, max: 1, step: 0.01, value: "0" });
  const shown = h("span", { class: "num" }, "0");
  input.addEventListener("input", () => (shown.textContent = input.value));
  return { el: field(key, input, ctx, { class: "slider", meta: shown }), get: () => Number(input.value) };
}

/** A choice between named values: `[[name, value], ...]`; the value is shown beside its name. */
function choiceInput(key, named, ctx) {
  const select = h(
    "select",
    {},
    named.map(([name, value]) =>
      h("option", { value: String(value) }, name === String(value) ? name : `${name.toLowerCase()} (${value})`),
    ),
  );
  return { el: field(key, select, ctx, { class: "choice" }), get: () => Number(select.value) };
}

/** An integer bit mask as one checkbox per bit, bit 0 first. */
function bitsInput(key, schema, ctx) {
  const boxes = [...Array(BIT_COUNT).keys()].map((bit) =>
    h("input", { type: "checkbox", "aria-label": `${key} bit ${bit}`, dataset: { bit: String(bit) } }),
  );
  const el = h(
    "fieldset",
    { class: "bits", dataset: { field: key }, title: ctx.help?.[key] || null },
    h("legend", {}, key),
    boxes.map((box, bit) => h("label", { class: "bit" }, box, h("span", {}, String(bit + 1)))),
  );
  return { el, get: () => boxes.reduce((mask, box, bit) => (box.checked ? mask | (1 << bit) : mask), 0) >>> 0 };
}

/** A matrix of booleans (rows of columns) as a grid of checkboxes: `rows[0]` is the top row. */
function gridInput(key, rows, columns, ctx) {
  const boxes = [...Array(rows).keys()].map((r) =>
    [...Array(columns).keys()].map((c) =>
      h("input", { type: "checkbox", "aria-label": `${key} row ${r + 1} column ${c + 1}`, dataset: { r, c } }),
    ),
  );
  const grid = h("div", { class: "grid" }, boxes.flat());
  grid.style.gridTemplateColumns = `repeat(${columns}, auto)`; // CSSOM: the page's policy allows no style attributes
  const el = h(
    "fieldset",
    { class: "matrix", dataset: { field: key }, title: ctx.help?.[key] || null },
    h("legend", {}, `${key} (${rows} × ${columns})`),
    grid,
    h(
      "div",
      { class: "row" },
      h("button", { type: "button", onclick: () => boxes.flat().forEach((b) => (b.checked = true)) }, "All on"),
      h("button", { type: "button", onclick: () => boxes.flat().forEach((b) => (b.checked = false)) }, "Clear"),
    ),
  );
  return { el, get: () => boxes.map((row) => row.map((box) => box.checked)) };
}

function checkbox(key, ctx) {
  const input = h("input", { type: "checkbox" });
  return { el: field(key, input, ctx, { class: "check" }), get: () => input.checked };
}

function textInput(key, ctx) {
  const input = h("input", { type: "text" });
  return { el: field(key, input, ctx), get: () => input.value };
}

/** Program source: several lines, monospace, tabs kept. */
function sourceInput(key, ctx) {
  const area = h("textarea", { rows: 8, class: "source", spellcheck: "false", placeholder: "program source" });
  area.addEventListener("keydown", (event) => {
    if (event.key !== "Tab" || event.shiftKey) return;
    event.preventDefault();
    area.setRangeText("    ", area.selectionStart, area.selectionEnd, "end");
  });
  return { el: field(key, area, ctx, { class: "wide" }), get: () => area.value };
}

/** A LEGO hub's port letter; "every motor" where the command allows an empty port (LegoMotorStop). */
function portInput(key, ctx) {
  const listed = ctx.device?.capabilities?.connectors;
  const ports = Array.isArray(listed) && listed.length ? listed.map(String) : LEGO_PORTS;
  const everyMotor = /empty/.test(ctx.described?.doc || "");
  const select = h(
    "select",
    {},
    everyMotor ? h("option", { value: "" }, "every motor") : null,
    ports.map((port) => h("option", { value: port }, `port ${port}`)),
  );
  return { el: field(key, select, ctx, { class: "choice" }), get: () => select.value };
}

function colourInput(key, convert) {
  const input = h("input", { type: "color", value: "#000000" });
  return { el: field(key, input, {}), get: () => convert(input.value) };
}

/** ROS Time/Duration as seconds. */
function secondsInput(key, ctx) {
  const input = h("input", { type: "number", class: "number", min: 0, step: "any", value: "0" });
  return {
    el: field(key, input, ctx, { meta: "s" }),
    get() {
      const seconds = Math.max(Number(input.value) || 0, 0);
      const sec = Math.floor(seconds);
      return { sec, nanosec: Math.min(Math.round((seconds - sec) * 1e9), 999999999) };
    },
  };
}

function arrayInput(schema, key, ctx) {
  const item = schema.items || {};
  const fixed = schema.minItems === schema.maxItems && schema.maxItems <= 16;
  if (item.type === "array" && item.items?.type === "boolean" && fixed && item.minItems === item.maxItems)
    return gridInput(key, schema.maxItems, item.maxItems, ctx);
  if (item.type === "boolean" && schema.maxItems <= 16) {
    const boxes = [...Array(schema.maxItems).keys()].map((i) =>
      h("input", { type: "checkbox", "aria-label": `${key} ${i}`, dataset: { item: String(i) } }),
    );
    const el = h(
      "fieldset",
      { class: "bits", dataset: { field: key }, title: ctx.help?.[key] || null },
      h("legend", {}, key),
      boxes.map((box, i) => h("label", { class: "bit" }, box, h("span", {}, String(i)))),
    );
    return { el, get: () => boxes.map((box) => box.checked) };
  }
  const scalar = ["number", "integer"].includes(item.type);
  if (scalar && fixed) {
    const inputs = [...Array(schema.maxItems).keys()].map((i) => formFor(item, `${key}[${i}]`, ctx));
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
      const value = Number(text);
      if (!Number.isFinite(value)) throw new Error(`${key}: ${JSON.stringify(text)} is not a number`);
      return value;
    };
    return {
      el: field(key, input, ctx, { meta: rangeText(item, unitOf(key, ctx)) }),
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
    el: field(key, area, ctx),
    get() {
      try {
        return JSON.parse(area.value || "[]");
      } catch (error) {
        throw new Error(`${key}: ${error.message}`);
      }
    },
  };
}

export function hexToRgb(hex) {
  const value = parseInt(hex.slice(1), 16);
  return [(value >> 16) & 255, (value >> 8) & 255, value & 255].map((c) => Math.round((c / 255) * 1000) / 1000);
}
