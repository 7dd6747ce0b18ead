// Rolling time plots on canvases. Samples are stamped with their arrival time in the page, so a plot
// scrolls smoothly whatever the device's clock says; drawing happens once per animation frame.

import { h, formatNumber } from "./dom.js";

export const SERIES_COLOURS = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];

const dirty = new Set();
let frameRequested = false;

function requestDraw(plot) {
  dirty.add(plot);
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(() => {
    frameRequested = false;
    const plots = [...dirty];
    dirty.clear();
    for (const each of plots) each.draw();
  });
}

/** A few series over the last `windowS` seconds; fixed `range` [low, high] or auto-scaled. */
export class TimePlot {
  constructor({ title = "", labels, unit = "", range = null, windowS = 10, height = 84, keepS = 0, timeAxis = false }) {
    this.labels = labels;
    /** Samples are kept this long (a zoomed-out window shows them); drawing shows the last `windowS`. */
    this.keepS = Math.max(keepS, windowS);
    this.timeAxis = timeAxis;
    /** While paused, samples are still kept but the picture stands still at `pausedAt`. */
    this.pausedAt = null;
    this.unit = unit;
    this.range = range;
    this.windowS = windowS;
    this.height = height;
    this.times = [];
    this.values = [];
    this.canvas = h("canvas", { class: "plot-canvas", height });
    this.readouts = labels.map((label, index) =>
      h(
        "span",
        { class: "readout", dataset: { series: label } },
        h("i", { class: `swatch series-${index % SERIES_COLOURS.length}` }),
        `${label} `,
        h("b", {}, "–"),
      ),
    );
    this.el = h(
      "figure",
      { class: "plot" },
      title ? h("figcaption", {}, title, unit ? h("small", {}, ` ${unit}`) : null) : null,
      this.canvas,
      h("div", { class: "legend" }, this.readouts),
    );
  }

  /** Add one sample (one value per series); `values` may be shorter than the labels. */
  push(values) {
    const now = performance.now() / 1000;
    this.times.push(now);
    this.values.push(values.slice(0, this.labels.length));
    while (this.times.length && this.times[0] < now - this.keepS) {
      this.times.shift();
      this.values.shift();
    }
    values.slice(0, this.labels.length).forEach((value, index) => {
      if (value !== undefined) this.readouts[index].lastChild.textContent = formatNumber(value);
    });
    requestDraw(this);
  }

  /** Show the last `seconds` (at most what is kept). */
  setWindow(seconds) {
    this.windowS = Math.min(seconds, this.keepS);
    requestDraw(this);
  }

  /** Freeze (true) or follow (false) the picture; samples keep arriving either way. */
  setPaused(paused) {
    this.pausedAt = paused ? performance.now() / 1000 : null;
    requestDraw(this);
  }

  _bounds() {
    if (this.range) return this.range;
    let low = Infinity;
    let high = -Infinity;
    const now = this.pausedAt ?? performance.now() / 1000;
    for (const [index, row] of this.values.entries()) {
      if (this.times[index] < now - this.windowS || this.times[index] > now) continue;
      for (const value of row) {
        if (value < low) low = value;
        if (value > high) high = value;
      }
    }
    if (!Number.isFinite(low)) return [-1, 1];
    const pad = Math.max((high - low) * 0.1, Math.abs(high) * 1e-3, 1e-6);
    return [low - pad, high + pad];
  }

  draw() {
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 300;
    // Match the backing store to the displayed size so lines stay crisp.
    if (canvas.width !== Math.round(width * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(this.height * ratio);
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, this.height);
    const [low, high] = this._bounds();
    const y = (value) => this.height - 4 - ((value - low) / (high - low)) * (this.height - 8);
    const now = this.pausedAt ?? performance.now() / 1000;
    const x = (time) => width - ((now - time) / this.windowS) * width;
    if (this.timeAxis) this._drawTimeAxis(ctx, width);

    ctx.strokeStyle = "#d4d4d8";
    ctx.lineWidth = 1;
    if (low < 0 && high > 0) {
      ctx.beginPath();
      ctx.moveTo(0, y(0));
      ctx.lineTo(width, y(0));
      ctx.stroke();
    }
    ctx.fillStyle = "#71717a";
    ctx.font = "10px system-ui, sans-serif";
    ctx.fillText(formatNumber(high), 2, 10);
    ctx.fillText(formatNumber(low), 2, this.height - 2);

    ctx.lineWidth = 1.5;
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, 0, width, this.height);
    ctx.clip();
    this.labels.forEach((_, series) => {
      ctx.strokeStyle = SERIES_COLOURS[series % SERIES_COLOURS.length];
      ctx.beginPath();
      let started = false;
      this.values.forEach((row, index) => {
        if (row[series] === undefined) return;
        const px = x(this.times[index]);
        const py = y(row[series]);
        if (started) ctx.lineTo(px, py);
        else ctx.moveTo(px, py);
        started = true;
      });
      ctx.stroke();
    });
    ctx.restore();
  }

  /** Vertical lines and labels every few seconds back from now ("-5 s"), for a time axis. */
  _drawTimeAxis(ctx, width) {
    const steps = [1, 2, 5, 10, 15, 30, 60];
    const step = steps.find((s) => this.windowS / s <= 6) ?? 60;
    ctx.strokeStyle = "#f0f0f2";
    ctx.fillStyle = "#71717a";
    ctx.font = "10px system-ui, sans-serif";
    for (let back = step; back < this.windowS; back += step) {
      const px = width - (back / this.windowS) * width;
      ctx.beginPath();
      ctx.moveTo(px, 0);
      ctx.lineTo(px, this.height);
      ctx.stroke();
      ctx.fillText(`-${back} s`, px + 2, this.height - 12);
    }
    ctx.fillText(this.pausedAt === null ? "now" : "paused", width - 34, this.height - 12);
  }
}
