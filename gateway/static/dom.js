// Small DOM and formatting helpers. Every element is built with `h`, never from HTML strings, so text
// coming from devices can never turn into markup.

/** Create an element: `h("div", {class: "x", dataset: {a: "1"}, onclick: f}, child, "text")`. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "value" || key === "checked")
      el[key] = value; // properties, not initial attributes
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Append children, skipping null/false and turning other values into text. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Numbers at a glance: integers as they are, floats with a precision that keeps the width steady. */
export function formatNumber(value) {
  if (typeof value !== "number") return value === undefined ? "–" : String(value);
  if (Number.isInteger(value) && Math.abs(value) < 1e15) return String(value);
  const magnitude = Math.abs(value);
  if (magnitude === 0) return "0";
  if (magnitude >= 1e6 || magnitude < 1e-3) return value.toExponential(2);
  if (magnitude >= 1000) return value.toFixed(0);
  if (magnitude >= 100) return value.toFixed(1);
  return value.toFixed(3);
}

/** "wiimote/State" → "State"; generic command names stay as they are. */
export function shortType(type) {
  const slash = type.lastIndexOf("/");
  return slash < 0 ? type : type.slice(slash + 1);
}

/** A JSON Schema of ROS Time or Duration: exactly {sec, nanosec}. */
export function isTimeSchema(schema) {
  const keys = schema && schema.type === "object" ? Object.keys(schema.properties || {}) : [];
  return keys.length === 2 && keys.includes("sec") && keys.includes("nanosec");
}

/** The full scale of an RGB colour schema: three channels in [0, 1] or in 0..255; else 0. */
export function rgbScale(schema) {
  const item = schema && schema.items;
  if (schema?.type !== "array" || schema.minItems !== 3 || schema.maxItems !== 3 || item?.minimum !== 0) return 0;
  if (item.type === "number" && item.maximum === 1) return 1;
  if (item.type === "integer" && item.maximum === 255) return 255;
  return 0;
}

/** Field names that hold colours, so an RGB-shaped value is drawn as a colour. */
export const COLOUR_NAME = /led|rgb|colou?r/i;

/** CSS colour of [r, g, b] channels in [0, `scale`]. */
export function cssRgb(rgb, scale = 1) {
  const channel = (c) => Math.round(Math.min(Math.max((Number(c) || 0) / scale, 0), 1) * 255);
  const [r, g, b] = (rgb || [0, 0, 0]).map(channel);
  return `rgb(${r}, ${g}, ${b})`;
}

/** Names of the constants of a described type that start with `prefix`, by value. */
export function constantsWithPrefix(described, prefix) {
  return Object.entries(described?.constants || {})
    .filter(([name]) => name.startsWith(prefix))
    .sort((a, b) => a[1] - b[1]);
}
