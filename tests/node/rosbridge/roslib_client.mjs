// roslib (roslibjs), unchanged, against the gateway's rosbridge endpoint: 2.x ("roslib", ES module)
// or 1.x ("roslib-1", npm's roslib 1.4.1 as Node apps load it, CommonJS).
// Usage: node roslib_client.mjs <ws url> <none|cbor|fragment> [roslib|roslib-1]
// Prints one JSON object with what it saw; tests/test_rosbridge_clients.py checks it.
const [url, mode = "none", library = "roslib"] = process.argv.slice(2);
const loaded = await import(library);
const ROSLIB = loaded.Ros ? loaded : loaded.default;

const TIMEOUT_MS = 8000;
const result = { mode, library, steps: [] };

function withTimeout(promise, what, ms = TIMEOUT_MS) {
  return Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms)),
  ]);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function callService(ros, name, type, args) {
  const service = new ROSLIB.Service({ ros, name, serviceType: type });
  return withTimeout(
    new Promise((resolve) =>
      service.callService(
        args,
        (values) => resolve({ ok: true, values }),
        (error) => resolve({ ok: false, error: String(error) }),
      ),
    ),
    `call ${name}`,
  );
}

async function collect(ros, name, type, ms, options = {}) {
  const topic = new ROSLIB.Topic({ ros, name, messageType: type, ...options });
  const messages = [];
  topic.subscribe((message) => messages.push(message));
  await sleep(ms);
  topic.unsubscribe();
  return messages;
}

async function main() {
  const ros = new ROSLIB.Ros({ url });
  await withTimeout(
    new Promise((resolve, reject) => {
      ros.on("connection", resolve);
      ros.on("error", (error) => reject(new Error(`connection error: ${error?.message ?? error}`)));
    }),
    "connection",
  );
  const compression = mode === "cbor" ? "cbor" : "none";

  const topics = await withTimeout(new Promise((resolve, reject) => ros.getTopics(resolve, reject)), "getTopics");
  result.topics = topics.topics;
  result.types = topics.types;
  result.topicType = await withTimeout(
    new Promise((resolve, reject) => ros.getTopicType("/wiimote/state", resolve, reject)),
    "getTopicType",
  );
  result.services = await withTimeout(new Promise((resolve, reject) => ros.getServices(resolve, reject)), "getServices");
  const details = await withTimeout(
    new Promise((resolve, reject) => ros.getMessageDetails("wiimote/State", resolve, reject)),
    "getMessageDetails",
  );
  result.typedefTypes = details.map((typedef) => typedef.type);
  result.decoded = Object.keys(ros.decodeTypeDefs(details));

  if (mode === "fragment") {
    // roslib never asks for fragments itself: a raw subscribe through its own connection does, and the
    // Topic below, on the same topic, must then get every message reassembled by roslib.
    ros.callOnConnection({
      op: "subscribe",
      id: "forced-fragments",
      topic: "/wiimote/state",
      type: "wiimote/State",
      fragment_size: 64,
    });
  }
  const wiimote = await collect(ros, "/wiimote/state", "wiimote/State", 1500, { compression });
  result.wiimoteCount = wiimote.length;
  result.wiimoteLast = wiimote.at(-1) ?? null;
  const thymio = await collect(ros, "/thymio/node_1/events/state", "asebaros_msgs/Event", 1500, { compression });
  result.thymioCount = thymio.length;
  result.thymioLast = thymio.at(-1) ?? null;
  const throttled = await collect(ros, "/sim_pad/state", "creos_messages/ControllerState", 2000, {
    compression,
    throttle_rate: 200,
  });
  result.throttledCount = throttled.length;

  // A Thymio LED command published on its ROS topic, then read back from the robot's gw.led.
  const led = new ROSLIB.Topic({ ros, name: "/thymio/led", messageType: "thymio_msgs/Led" });
  led.publish({ id: 0, values: [1, 1, 1, 1, 1, 1, 1, 1] });
  let leds = null;
  for (let attempt = 0; attempt < 40; attempt++) {
    const answer = await callService(ros, "/thymio/aseba/get_variable", "asebaros_msgs/GetVariable", {
      variable: "gw.led",
    });
    leds = answer;
    if (answer.ok && answer.values.data.slice(0, 8).every((value) => value === 32)) break;
    await sleep(100);
  }
  result.leds = leds;
  result.missingVariable = await callService(ros, "/thymio/aseba/get_variable", "asebaros_msgs/GetVariable", {
    variable: "nope",
  });

  // An unknown topic: the status error carries the subscribe's id.
  const unknown = new ROSLIB.Topic({ ros, name: "/no/such/topic", messageType: "std_msgs/String" });
  const status = new Promise((resolve) => {
    unknown.subscribe(() => {});
    ros.once(`status:${unknown.subscribeId}`, resolve);
  });
  result.unknownStatus = await withTimeout(status, "status of an unknown topic");
  ros.close();
}

main()
  .then(() => {
    // Exit only once the whole result is out: a pipe takes it in 64 KiB pieces, and exit drops the rest.
    process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0));
  })
  .catch((error) => {
    result.error = String(error?.stack ?? error);
    process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(1));
  });
