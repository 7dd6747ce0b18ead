// A device's own plot: pick any numeric field of any of its topics (the ones the page has received),
// see it over time with a time axis, pause the picture, and zoom between 5 s and 2 min. A LEGO motor's
// position is plotted from its first sample.

import { h } from "./dom.js";
import { TimePlot } from "./plot.js";

const WINDOWS_S = [5, 10, 30, 60, 120];
const KEEP_S = 120;
const MAX_SERIES = 6;
/** Fields plotted as soon as they appear: a LEGO motor's position. */
const AUTO_PLOT = [/\/port\/[A-Z]$/, /^position_deg$/];

/** Numeric leaves of `value`: [["accel.x", 0.1], ["prox[0]", 3], ...] (arrays up to 16 items). */
function numericLeaves(value, prefix = "", out = []) {
  if (typeof value === "number") out.push([prefix, value]);
  else if (Array.isArray(value)) {
    if (value.length <= 16) value.forEach((item, i) => numericLeaves(item, `${prefix}[${i}]`, out));
  } else if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      if (key === "stamp" || key === "timestamp") continue; // the clock is the time axis
      numericLeaves(item, prefix ? `${prefix}.${key}` : key, out);
    }
  }
  return out;
}

/** The picker for device `deviceId`: `{el, offer(topic, data)}`. */
export function createPicker(deviceId) {
  const known = new Map(); // "topic field" -> [topic, path]
  const latest = new Map(); // "topic field" -> its last value
  const chosen = []; // [{topic, path, label}]
  const select = h("select", { class: "pick-field", "aria-label": "numeric field to plot" }, h("option", { value: "" }, "pick a numeric field…"));
  const add = h("button", { type: "button", class: "pick-add" }, "Plot");
  const clear = h("button", { type: "button", class: "pick-clear" }, "Clear");
  const pause = h("button", { type: "button", class: "pick-pause", "aria-pressed": "false" }, "Pause");
  const zoom = h(
    "select",
    { class: "pick-window", "aria-label": "time window" },
    WINDOWS_S.map((s) => h("option", { value: String(s), selected: s === 10 }, `last ${s} s`)),
  );
  const slot = h("div", { class: "pick-plot" });
  const empty = h("p", { class: "hint" }, "Choose a field and press Plot: every numeric field the device publishes is listed.");
  let plot = null;

  const rebuild = () => {
    plot = chosen.length
      ? new TimePlot({
          labels: chosen.map((c) => c.label),
          windowS: Number(zoom.value),
          keepS: KEEP_S,
          height: 110,
          timeAxis: true,
        })
      : null;
    // The last value of each field at once (a topic that publishes only on change may not send again soon).
    if (plot) plot.push(chosen.map((c) => latest.get(`${c.topic} ${c.path}`)));
    if (plot && pause.getAttribute("aria-pressed") === "true") plot.setPaused(true);
    slot.replaceChildren(plot ? plot.el : empty);
  };
  const choose = (topic, path) => {
    if (chosen.some((c) => c.topic === topic && c.path === path) || chosen.length >= MAX_SERIES) return;
    const suffix = topic.slice(deviceId.length + 1);
    chosen.push({ topic, path, label: `${suffix} ${path}` });
    rebuild();
  };
  add.addEventListener("click", () => {
    const entry = known.get(select.value);
    if (entry) choose(...entry);
  });
  clear.addEventListener("click", () => {
    chosen.length = 0;
    rebuild();
  });
  pause.addEventListener("click", () => {
    const paused = pause.getAttribute("aria-pressed") !== "true";
    pause.setAttribute("aria-pressed", String(paused));
    pause.textContent = paused ? "Resume" : "Pause";
    plot?.setPaused(paused);
  });
  zoom.addEventListener("change", () => plot?.setWindow(Number(zoom.value)));
  rebuild();

  const el = h(
    "div",
    { class: "stream picker", dataset: { picker: deviceId } },
    h("h3", {}, "Plot", h("small", {}, "any numeric field, over time")),
    h("div", { class: "row" }, select, add, pause, zoom, clear),
    slot,
  );
  return {
    el,
    offer(topic, data) {
      const leaves = numericLeaves(data);
      for (const [path, value] of leaves) {
        const key = `${topic} ${path}`;
        latest.set(key, value);
        if (known.has(key)) continue;
        known.set(key, [topic, path]);
        select.append(h("option", { value: key }, `${topic.slice(deviceId.length + 1)} · ${path}`));
        if (AUTO_PLOT[0].test(topic) && AUTO_PLOT[1].test(path)) choose(topic, path);
      }
      if (!plot) return;
      const mine = chosen.map((c) => (c.topic === topic ? leaves.find(([path]) => path === c.path)?.[1] : undefined));
      if (mine.some((v) => v !== undefined)) plot.push(mine);
    },
  };
}
