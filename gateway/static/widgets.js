// Live views of published messages. Any type gets a generic view built from its `describe` schema
// (numbers, bars for numeric arrays, lamps for booleans, colour swatches for RGB fields); a few types
// get a purpose-built widget with plots, and keep the generic view under "all fields".

import { COLOUR_NAME, constantsWithPrefix, cssRgb, formatNumber, h, isTimeSchema, rgbScale } from "./dom.js";
import { TimePlot } from "./plot.js";

/** Arrays longer than this are summarised instead of drawn element by element. */
const MAX_DRAWN_ITEMS = 32;
const MAX_BARS = 64;

// -- generic views: each returns {el, set(value)} -----------------------------------------------

/** A view of any value of `schema`; `key` is the field's name (it marks colour fields). */
export function viewFor(schema, key = "") {
  if (!schema) return textView();
  if (isTimeSchema(schema)) return timeView();
  const scale = COLOUR_NAME.test(key) ? rgbScale(schema) : 0;
  if (scale) return swatchView(scale);
  switch (schema.type) {
    case "object":
      return objectView(schema);
    case "array":
      return arrayView(schema, key);
    case "boolean":
      return lampView();
    case "number":
    case "integer":
      return numberView(schema);
    default:
      return textView();
  }
}

function objectView(schema) {
  const children = Object.entries(schema.properties || {}).map(([name, sub]) => [name, viewFor(sub, name)]);
  const el = h(
    "div",
    { class: "fields" },
    children.map(([name, view]) =>
      h("div", { class: "field", dataset: { field: name } }, h("span", { class: "key" }, name), view.el),
    ),
  );
  return {
    el,
    set(value) {
      for (const [name, view] of children) view.set(value?.[name]);
    },
  };
}

function textView() {
  const el = h("span", { class: "text" }, "–");
  return {
    el,
    set(value) {
      el.textContent =
        value === undefined || value === "" ? "–" : typeof value === "string" ? value : JSON.stringify(value);
    },
  };
}

/** ROS Time/Duration: epoch times as a clock time, spans in seconds. */
function timeView() {
  const el = h("span", { class: "num" }, "–");
  return {
    el,
    set(value) {
      const seconds = (value?.sec ?? 0) + (value?.nanosec ?? 0) * 1e-9;
      el.textContent = seconds > 1e9 ? clockTime(seconds) : `${seconds.toFixed(3)} s`;
    },
  };
}

function clockTime(seconds) {
  const date = new Date(seconds * 1000);
  const pad = (n, width = 2) => String(n).padStart(width, "0");
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

/** A number, with a meter when its range is small enough to be read as a level (0..1, ±1, %). */
function numberView(schema) {
  const text = h("span", { class: "num" }, "–");
  const range = levelRange(schema);
  const fill = range ? h("span", { class: "meter-fill" }) : null;
  const el = h("span", { class: "value" }, fill ? h("span", { class: "meter" }, fill) : null, text);
  return {
    el,
    set(value) {
      text.textContent = formatNumber(value);
      if (fill && typeof value === "number") setLevel(fill, value, range);
    },
  };
}

function levelRange(schema) {
  const { minimum: low, maximum: high } = schema;
  if (low === undefined || high === undefined || high <= low) return null;
  return high - low <= 100 && (low === 0 || low === -high) ? [low, high] : null;
}

function setLevel(fill, value, [low, high]) {
  const fraction = Math.min(Math.max((value - low) / (high - low), 0), 1);
  fill.style.width = `${(fraction * 100).toFixed(1)}%`;
}

function lampView(label = "") {
  const el = h("span", { class: "lamp", title: label || null }, label);
  return {
    el,
    set(value) {
      el.classList.toggle("on", Boolean(value));
    },
  };
}

function swatchView(scale) {
  const el = h("span", { class: "swatch-big" });
  return {
    el,
    set(value) {
      el.style.background = cssRgb(value, scale);
      el.title = Array.isArray(value) ? value.map(formatNumber).join(", ") : "";
    },
  };
}

function arrayView(schema, key) {
  const item = schema.items || {};
  const scale = COLOUR_NAME.test(key) ? rgbScale(item) : 0;
  if (scale) return listView(() => swatchView(scale), "swatches");
  if (item.type === "boolean") return listView(() => lampView(), "lamps");
  if (item.type === "number" || item.type === "integer") return barsView(item);
  if (item.type === "string") return textView();
  return listView((index) => {
    const view = viewFor(item, key);
    return { el: h("div", { class: "item" }, h("span", { class: "key" }, `[${index}]`), view.el), set: view.set };
  }, "items");
}

/** One child view per element, created and removed as the array's length changes. */
function listView(make, className) {
  const more = h("span", { class: "more" });
  const el = h("div", { class: className });
  const views = [];
  return {
    el,
    set(values) {
      const list = Array.isArray(values) ? values : [];
      const shown = Math.min(list.length, MAX_DRAWN_ITEMS);
      while (views.length < shown) {
        const view = make(views.length);
        views.push(view);
        el.insertBefore(view.el, more.parentNode ? more : null);
      }
      while (views.length > shown) views.pop().el.remove();
      views.forEach((view, index) => view.set(list[index]));
      more.textContent = list.length > shown ? `+${list.length - shown} more` : list.length ? "" : "empty";
      if (!more.parentNode) el.append(more);
    },
  };
}

/** Numeric arrays as small bars: a fixed scale for unit and ±1 ranges, else the largest value seen. */
function barsView(item) {
  const fixed = levelRange(item);
  let seenMax = 0;
  const el = h("div", { class: "bars" });
  const summary = h("span", { class: "num" });
  const bars = [];
  return {
    el,
    set(values) {
      const list = Array.isArray(values) ? values : [];
      if (list.length > MAX_BARS) {
        el.replaceChildren(summary);
        summary.textContent = `${list.length} values: ${list.slice(0, 8).map(formatNumber).join(", ")}, …`;
        bars.length = 0;
        return;
      }
      if (bars.length !== list.length) {
        bars.length = 0;
        el.replaceChildren();
        for (let index = 0; index < list.length; index++) {
          const fill = h("span", { class: "bar-fill" });
          const label = h("span", { class: "bar-value" });
          const bar = h(
            "span",
            { class: "bar" },
            h("span", { class: "bar-track" }, fill),
            list.length <= 8 ? label : null,
          );
          bars.push({ bar, fill, label });
          el.append(bar);
        }
        if (!list.length) el.append(h("span", { class: "more" }, "empty"));
      }
      for (const value of list) seenMax = Math.max(seenMax, Math.abs(value));
      const [low, high] = fixed || (list.some((v) => v < 0) ? [-seenMax || -1, seenMax || 1] : [0, seenMax || 1]);
      list.forEach((value, index) => {
        const { bar, fill, label } = bars[index];
        // Bars grow from zero: up for positive values, down for negative ones.
        const zero = Math.min(Math.max((0 - low) / (high - low), 0), 1);
        const at = Math.min(Math.max((value - low) / (high - low), 0), 1);
        fill.style.bottom = `${(Math.min(zero, at) * 100).toFixed(1)}%`;
        fill.style.height = `${(Math.abs(at - zero) * 100).toFixed(1)}%`;
        bar.title = `[${index}] ${formatNumber(value)}`;
        label.textContent = formatNumber(value);
      });
    },
  };
}

// -- special widgets: each returns {el, update(data)} ------------------------------------------

/** The generic view of the whole message, drawn only while its <details> is open. */
function allFields(described) {
  const view = viewFor(described?.schema, "");
  const el = h("details", { class: "all-fields" }, h("summary", {}, "all fields"), view.el);
  let last = null;
  el.addEventListener("toggle", () => el.open && last && view.set(last));
  return {
    el,
    set(data) {
      last = data;
      if (el.open) view.set(data);
    },
  };
}

// creos_messages/ControllerState documents the gamepad order of its 6 axes and 17 buttons.
const GAMEPAD_AXES = ["LX", "LY", "RX", "RY", "LT", "RT"];
const GAMEPAD_BUTTONS = [
  "✕",
  "◯",
  "△",
  "□",
  "L1",
  "R1",
  "L2",
  "R2",
  "Share",
  "Options",
  "PS",
  "L3",
  "R3",
  "◀",
  "▲",
  "▶",
  "▼",
];

function controllerWidget(described, device) {
  // The device names its own axes and buttons (a Wii Remote's, a Thymio's); else the gamepad order.
  const names = device?.capabilities?.controller || {};
  const time = timeView();
  const axesSlot = h("div");
  const buttonsSlot = h("div", { class: "pills" });
  const el = h(
    "div",
    { class: "widget controller" },
    axesSlot,
    buttonsSlot,
    h("div", { class: "stamp" }, "sample time ", time.el),
  );
  let plot = null;
  let pills = [];
  return {
    el,
    update(data) {
      const axes = data.axes || [];
      // Controllers with only buttons (a Thymio's) get no axes plot.
      if (axes.length && (!plot || plot.labels.length !== axes.length)) {
        const labels =
          names.axes?.length === axes.length
            ? names.axes
            : axes.length === GAMEPAD_AXES.length
              ? GAMEPAD_AXES
              : axes.map((_, i) => `a${i}`);
        plot = new TimePlot({ title: "axes", labels, range: [-1, 1] });
        axesSlot.replaceChildren(plot.el);
      }
      if (plot) plot.push(axes);
      const buttons = data.buttons || [];
      if (pills.length !== buttons.length) {
        const labels =
          names.buttons?.length === buttons.length
            ? names.buttons
            : buttons.length === GAMEPAD_BUTTONS.length
              ? GAMEPAD_BUTTONS
              : buttons.map((_, i) => `b${i}`);
        pills = labels.map((name) => h("span", { class: "pill" }, name));
        buttonsSlot.replaceChildren(...pills);
      }
      // ButtonState: 1 pressed, 2 long press; -1/0/1 for 3-way switches.
      buttons.forEach((value, index) => {
        pills[index].classList.toggle("on", value === 1);
        pills[index].classList.toggle("long", value === 2);
        pills[index].classList.toggle("neg", value === -1);
      });
      time.set(data.timestamp);
    },
  };
}

/** The Wii Remote camera reports IR points on a 1024×768 grid. */
const IR_WIDTH = 1024;
const IR_HEIGHT = 768;

function wiimoteWidget(described) {
  // MSG_BTN_Z and MSG_BTN_C index `nunchuk_buttons`; every other MSG_BTN_* indexes `buttons`.
  const nunchukNames = new Set(["MSG_BTN_Z", "MSG_BTN_C"]);
  const buttonConstants = constantsWithPrefix(described, "MSG_BTN_");
  const remote = buttonConstants.filter(([name]) => !nunchukNames.has(name));
  const nunchuk = buttonConstants.filter(([name]) => nunchukNames.has(name));
  const pill = ([name, index]) => ({ index, el: h("span", { class: "pill" }, name.replace("MSG_BTN_", "")) });
  const remotePills = remote.map(pill);
  const nunchukPills = nunchuk.map(pill);

  const battery = numberView({ minimum: 0, maximum: 100 });
  const leds = [0, 1, 2, 3].map((i) => lampView(String(i + 1)));
  const rumble = lampView("rumble");
  const canvas = h("canvas", { class: "ir", width: IR_WIDTH, height: IR_HEIGHT, dataset: { value: "ir" } });
  const accel = new TimePlot({ title: "acceleration", unit: "m/s²", labels: ["x", "y", "z"] });
  const gyro = new TimePlot({ title: "angular velocity", unit: "rad/s", labels: ["x", "y", "z"] });
  const fields = allFields(described);
  const el = h(
    "div",
    { class: "widget wiimote" },
    h(
      "div",
      { class: "row" },
      h("span", { class: "key" }, "battery"),
      battery.el,
      h("small", {}, "%"),
      h("span", { class: "key" }, "LEDs"),
      leds.map((led) => led.el),
      rumble.el,
    ),
    h(
      "div",
      { class: "pills" },
      remotePills.map((p) => p.el),
      h("span", { class: "sep" }),
      nunchukPills.map((p) => p.el),
    ),
    h(
      "div",
      { class: "split" },
      h("figure", { class: "plot" }, h("figcaption", {}, "IR points ", h("small", {}, "1024×768")), canvas),
      h("div", {}, accel.el, gyro.el),
    ),
    fields.el,
  );
  return {
    el,
    update(data) {
      battery.set(data.percent_battery);
      (data.LEDs || []).forEach((on, i) => leds[i]?.set(on));
      rumble.set(data.rumble);
      for (const p of remotePills) p.el.classList.toggle("on", Boolean(data.buttons?.[p.index]));
      for (const p of nunchukPills) p.el.classList.toggle("on", Boolean(data.nunchuk_buttons?.[p.index]));
      const a = data.linear_acceleration_zeroed || {};
      const g = data.angular_velocity_zeroed || {};
      accel.push([a.x, a.y, a.z]);
      gyro.push([g.x, g.y, g.z]);
      drawIr(canvas, data.ir_tracking || []);
      fields.set(data);
    },
  };
}

function drawIr(canvas, points) {
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#18181b";
  ctx.fillRect(0, 0, IR_WIDTH, IR_HEIGHT);
  // The canvas is shown at about a fifth of its size: thick lines stay visible.
  ctx.strokeStyle = "#52525b";
  ctx.lineWidth = 5;
  for (let x = 256; x < IR_WIDTH; x += 256) line(ctx, x, 0, x, IR_HEIGHT);
  for (let y = 192; y < IR_HEIGHT; y += 192) line(ctx, 0, y, IR_WIDTH, y);
  ctx.font = "48px system-ui, sans-serif";
  points.forEach((point, index) => {
    // x < 0 (INVALID_FLOAT) marks a source the camera does not see.
    if (!(point.x >= 0 && point.y >= 0)) return;
    const radius = 14 + Math.max(point.ir_size, 0) * 4;
    ctx.fillStyle = "#fde047";
    ctx.beginPath();
    ctx.arc(point.x, point.y, radius, 0, 2 * Math.PI);
    ctx.fill();
    ctx.fillStyle = "#fafafa";
    ctx.fillText(String(index), point.x + radius + 6, point.y + 16);
  });
}

function line(ctx, x0, y0, x1, y1) {
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.lineTo(x1, y1);
  ctx.stroke();
}

function kortexFeedbackWidget(described) {
  const xyz = (prefix) => ["x", "y", "z"].map((axis) => `${prefix}${axis}`);
  const plots = [
    { plot: new TimePlot({ title: "force", unit: "N", labels: ["x", "y", "z"] }), keys: xyz("force_") },
    { plot: new TimePlot({ title: "torque", unit: "N·m", labels: ["x", "y", "z"] }), keys: xyz("torque_") },
    {
      plot: new TimePlot({ title: "IMU acceleration", unit: "m/s²", labels: ["x", "y", "z"] }),
      keys: xyz("imu_acceleration_"),
    },
    {
      plot: new TimePlot({ title: "IMU angular velocity", unit: "deg/s", labels: ["x", "y", "z"] }),
      keys: xyz("imu_angular_velocity_"),
    },
  ];
  const numbers = [
    ["voltage", "V"],
    ["temperature_core", "°C"],
  ].map(([key, unit]) => ({ key, unit, view: numberView({}) }));
  const masks = ["buttons_state", "digital_inputs_state"].map((key) => ({
    key,
    lamps: [...Array(8).keys()].map((bit) => lampView(String(bit))),
  }));
  const hex = ["status_flags", "fault_bank_a", "fault_bank_b"].map((key) => ({
    key,
    el: h("span", { class: "num" }, "–"),
  }));
  const fields = allFields(described);
  const el = h(
    "div",
    { class: "widget kortex" },
    h(
      "div",
      { class: "row" },
      numbers.map((n) => [h("span", { class: "key" }, n.key), n.view.el, h("small", {}, n.unit)]),
    ),
    masks.map((m) =>
      h(
        "div",
        { class: "row" },
        h("span", { class: "key" }, m.key),
        m.lamps.map((lamp) => lamp.el),
      ),
    ),
    h(
      "div",
      { class: "row" },
      hex.map((x) => [h("span", { class: "key" }, x.key), x.el]),
    ),
    h(
      "div",
      { class: "plot-grid" },
      plots.map((p) => p.plot.el),
    ),
    fields.el,
  );
  return {
    el,
    update(data) {
      for (const { plot, keys } of plots) plot.push(keys.map((key) => data[key]));
      for (const n of numbers) n.view.set(data[n.key]);
      for (const m of masks) m.lamps.forEach((lamp, bit) => lamp.set((data[m.key] >>> bit) & 1));
      for (const x of hex) x.el.textContent = `0x${(data[x.key] >>> 0).toString(16).padStart(8, "0")}`;
      fields.set(data);
    },
  };
}

/** kortex/BaseCyclic/Actuators: a joint × quantity table, and one plot per quantity (every joint a line). */
const ACTUATOR_QUANTITIES = [
  ["position", "position", "°"],
  ["velocity", "velocity", "°/s"],
  ["torque", "torque", "N·m"],
  ["current_motor", "current", "A"],
];

function kortexActuatorsWidget(described) {
  const head = h(
    "tr",
    {},
    h("th", {}, "joint"),
    ACTUATOR_QUANTITIES.map(([, title, unit]) => h("th", {}, title, " ", h("small", {}, unit))),
  );
  const body = h("tbody");
  const plotsEl = h("div", { class: "plot-grid" });
  const fields = allFields(described);
  const el = h(
    "div",
    { class: "widget actuators" },
    h("div", { class: "table-scroll" }, h("table", { class: "joints" }, h("thead", {}, head), body)),
    plotsEl,
    fields.el,
  );
  let rows = [];
  let plots = [];
  return {
    el,
    update(data) {
      const joints = data.actuators || [];
      if (rows.length !== joints.length) {
        rows = joints.map(() => ACTUATOR_QUANTITIES.map(() => h("td", { class: "num" }, "–")));
        const row = (cells, index) => h("tr", { dataset: { joint: String(index + 1) } }, h("th", {}, index + 1), cells);
        body.replaceChildren(...rows.map(row));
        const labels = joints.map((_, index) => `J${index + 1}`);
        plots = ACTUATOR_QUANTITIES.map(([, title, unit]) => new TimePlot({ title, unit, labels }));
        plotsEl.replaceChildren(...plots.map((plot) => plot.el));
      }
      joints.forEach((joint, index) => {
        ACTUATOR_QUANTITIES.forEach(([key], column) => {
          rows[index][column].textContent = formatNumber(joint[key]);
        });
      });
      ACTUATOR_QUANTITIES.forEach(([key], column) => plots[column].push(joints.map((joint) => joint[key])));
      fields.set(data);
    },
  };
}

/** hwgateway/ThymioState: proximity and ground sensors as named bars, buttons by name, SI units. */
const THYMIO_PROX = [
  "front left",
  "front left-centre",
  "front centre",
  "front right-centre",
  "front right",
  "back left",
  "back right",
];
const THYMIO_GROUND = ["ground left", "ground right"];
const THYMIO_BUTTONS = ["backward", "left", "center", "forward", "right"];
/** A proximity sensor reads about 4500 when touching, the ground sensors up to about 1023. */
const PROX_MAX = 4500;
const GROUND_MAX = 1023;

function namedBars(names, maximum) {
  const rows = names.map((name) => {
    const fill = h("span", { class: "meter-fill" });
    const value = h("span", { class: "num" }, "–");
    const el = h(
      "div",
      { class: "named-bar", dataset: { sensor: name } },
      h("span", { class: "key" }, name),
      h("span", { class: "meter wide" }, fill),
      value,
    );
    return { el, fill, value };
  });
  return {
    el: h("div", { class: "named-bars" }, rows.map((row) => row.el)),
    set(values) {
      rows.forEach((row, index) => {
        const v = values?.[index];
        row.value.textContent = formatNumber(v);
        if (typeof v === "number") setLevel(row.fill, v, [0, maximum]);
      });
    },
  };
}

function thymioStateWidget(described) {
  const prox = namedBars(THYMIO_PROX, PROX_MAX);
  const ground = namedBars(THYMIO_GROUND, GROUND_MAX);
  const pills = THYMIO_BUTTONS.map((name) => h("span", { class: "pill" }, name));
  const temperature = h("span", { class: "num" }, "–");
  const motors = new TimePlot({
    title: "wheel speeds",
    unit: "Thymio units (500 ≈ 20 cm/s)",
    labels: ["left", "right"],
    range: [-500, 500],
  });
  const accel = new TimePlot({ title: "acceleration", unit: "m/s²", labels: ["x", "y", "z"] });
  const fields = allFields(described);
  const el = h(
    "div",
    { class: "widget thymio" },
    h("div", { class: "pills" }, pills),
    h("div", { class: "row" }, h("span", { class: "key" }, "temperature"), temperature, h("small", {}, "°C")),
    h(
      "div",
      { class: "split" },
      h("div", {}, h("h4", {}, "proximity"), prox.el, h("h4", {}, "ground"), ground.el),
      h("div", {}, motors.el, accel.el),
    ),
    fields.el,
  );
  return {
    el,
    update(data) {
      prox.set(data.prox_horizontal);
      ground.set(data.prox_ground_delta);
      (data.buttons || []).forEach((on, index) => pills[index]?.classList.toggle("on", Boolean(on)));
      temperature.textContent = formatNumber(data.temperature);
      motors.push([data.motor_left_speed, data.motor_right_speed]);
      const a = data.acceleration || {};
      accel.push([a.x, a.y, a.z]);
      fields.set(data);
    },
  };
}

/** kortex/WristCyclicC61/Command (what the gateway last sent the wrist): LED ring swatch, outputs as lamps. */
function kortexWristCommandWidget(described) {
  const ring = h("span", { class: "swatch-big", dataset: { value: "led_ring" } });
  const blink = h("span", { class: "num" }, "–");
  const outputs = [...Array(8).keys()].map((bit) => lampView(String(bit)));
  const analog = ["a_channel_1", "a_channel_2", "b_channel_1", "b_channel_2"].map((channel) => ({
    key: `analog_output_${channel}_value`,
    el: h("span", { class: "num" }, "–"),
    channel,
  }));
  const fields = allFields(described);
  const el = h(
    "div",
    { class: "widget kortex-command" },
    h(
      "div",
      { class: "row" },
      h("span", { class: "key" }, "LED ring"),
      ring,
      h("span", { class: "key" }, "blink"),
      blink,
      h("small", {}, "Hz"),
    ),
    h("div", { class: "row" }, h("span", { class: "key" }, "digital outputs"), outputs.map((lamp) => lamp.el)),
    h("div", { class: "row" }, analog.map((a) => [h("span", { class: "key" }, a.channel), a.el])),
    fields.el,
  );
  return {
    el,
    update(data) {
      const rgb = data.led_ring_rgb >>> 0;
      ring.style.background = `rgb(${(rgb >> 16) & 255}, ${(rgb >> 8) & 255}, ${rgb & 255})`;
      ring.title = `#${rgb.toString(16).padStart(6, "0")}`;
      blink.textContent = formatNumber(data.led_ring_blink_frequency);
      outputs.forEach((lamp, bit) => lamp.set((data.digital_outputs_state >>> bit) & 1));
      for (const a of analog) a.el.textContent = formatNumber(data[a.key]);
      fields.set(data);
    },
  };
}

/** The layout of `<id>/node/<n>/events/<name>` the device lists in `capabilities.events`, or null. */
export function eventLayout(device, topic) {
  const match = /\/node\/(\d+)\/events\/(.+)$/.exec(topic);
  if (!match) return null;
  // `topic` is the name as the topic writes it (escaped); a device from before it has only `name`.
  const segment = (event) => event.topic ?? event.name;
  return device?.capabilities?.events?.[match[1]]?.find((event) => segment(event) === match[2]) || null;
}

/** asebaros_msgs/Event: each word labelled from the script's declared event (its name, size, words). */
function asebaEventWidget(described, device, topic) {
  const segment = topic.slice(topic.lastIndexOf("/") + 1);
  const note = h("p", { class: "event-size" });
  const rows = h("div", { class: "fields event-words" });
  const fields = allFields(described);
  const el = h("div", { class: "widget aseba-event" }, note, rows, fields.el);
  const cells = [];
  return {
    el,
    update(data) {
      // Read at every sample: a newly loaded script changes the device's event layouts.
      const layout = eventLayout(device, topic);
      const name = layout?.name ?? segment;
      const words = Array.isArray(data.data) ? data.data : [];
      const size = typeof layout?.size === "number" ? layout.size : null;
      note.textContent =
        size === null
          ? `${words.length} word${words.length === 1 ? "" : "s"}; the script declares no size for "${name}"`
          : `${words.length} of ${size} declared word${size === 1 ? "" : "s"}` +
            (words.length > size ? `: ${words.length - size} beyond the declared size` : "");
      const count = Math.max(words.length, size || 0);
      while (cells.length < count) {
        const key = h("span", { class: "key" });
        const value = h("span", { class: "num" });
        const row = h("div", { class: "field" }, key, value);
        rows.append(row);
        cells.push({ row, key, value });
      }
      while (cells.length > count) cells.pop().row.remove();
      cells.forEach((cell, index) => {
        cell.key.textContent = layout?.words?.[index] || (size === 1 ? name : `${name}[${index}]`);
        cell.value.textContent = index < words.length ? formatNumber(words[index]) : "–";
        cell.row.dataset.word = String(index);
        cell.row.classList.toggle("beyond", size !== null && index >= size);
        cell.row.classList.toggle("missing", index >= words.length);
      });
      fields.set(data);
    },
  };
}

/** hwgateway/BindingStatus: what a binding does now (state and why), its deadman, input age and last output. */
function bindingStatusWidget(described) {
  const state = h("span", { class: "binding-state", dataset: { state: "idle" } }, "–");
  const reason = h("span", { class: "text binding-reason" }, "");
  const deadman = lampView("deadman held");
  const clamped = lampView("clamped");
  const age = h("span", { class: "num binding-age" }, "–");
  const output = h("span", { class: "text binding-output" }, "–");
  const fields = allFields(described);
  const el = h(
    "div",
    { class: "widget binding" },
    h("div", { class: "row" }, state, reason),
    h("div", { class: "lamps" }, deadman.el, clamped.el),
    h("div", { class: "row" }, h("span", { class: "key" }, "input age"), age, h("small", {}, "s")),
    h("div", { class: "row" }, h("span", { class: "key" }, "last output"), output),
    fields.el,
  );
  return {
    el,
    update(data) {
      state.textContent = data.state;
      state.dataset.state = data.state;
      reason.textContent = data.reason || "";
      deadman.set(data.deadman_held);
      clamped.set(data.clamped);
      age.textContent = data.input_age_s < 0 ? "none yet" : formatNumber(data.input_age_s);
      const values = (data.fields || []).map((name, index) => `${name} ${formatNumber(data.values?.[index])}`);
      output.textContent = data.command ? `${data.target} ${data.command}: ${values.join(", ")}` : "–";
      fields.set(data);
    },
  };
}

const SPECIAL = {
  "hwgateway/BindingStatus": bindingStatusWidget,
  "hwgateway/ThymioState": thymioStateWidget,
  "kortex/WristCyclicC61/Command": kortexWristCommandWidget,
  "kortex/BaseCyclic/Actuators": kortexActuatorsWidget,
  "creos_messages/ControllerState": controllerWidget,
  "wiimote/State": wiimoteWidget,
  "kortex/WristCyclicC61/Feedback": kortexFeedbackWidget,
  "asebaros_msgs/Event": asebaEventWidget,
};

/**
 * The live view of `topic`, of type `type`: `described` is its describe result (or null), `device`
 * its device's `list_devices` entry (button names in `capabilities.controller`, event layouts in
 * `capabilities.events`).
 */
export function createWidget(type, described, device = null, topic = "") {
  const make = SPECIAL[type];
  if (make) return make(described, device, topic);
  const slot = h("div", { class: "widget generic" });
  let view = null;
  return {
    el: slot,
    update(data) {
      if (!view) {
        // Without a schema (describe failed), the first sample's shape stands in for one.
        view = viewFor(described?.schema || inferSchema(data), "");
        slot.append(view.el);
      }
      view.set(data);
    },
  };
}

function inferSchema(value) {
  if (Array.isArray(value)) return { type: "array", items: inferSchema(value[0]) };
  if (value && typeof value === "object") {
    return {
      type: "object",
      properties: Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inferSchema(v)])),
    };
  }
  if (typeof value === "boolean") return { type: "boolean" };
  if (typeof value === "number") return { type: "number" };
  return { type: "string" };
}
