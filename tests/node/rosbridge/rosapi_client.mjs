// The rosapi calls of Lichtblick's (and Foxglove Studio's) Rosbridge source and of roslib's helpers,
// made with the published clients unchanged, against the gateway's rosbridge endpoint.
//   node rosapi_client.mjs <ws url> <topic> <service> <message type> <service type> [raw topic...]
// Prints one JSON report; tests/test_rosbridge_rosapi.py checks it.
//
// Lichtblick's RosbridgePlayer does, with @lichtblick/roslibjs: getTopicsAndRawTypes, then for each
// topic `parse(typedefs_full_text[i], {ros2})` (@lichtblick/rosmsg) and `new MessageReader(parsed)`
// (@lichtblick/rosmsg-serialization); then getNodes and getNodeDetails for each node; and
// getServiceType before it calls a service. Foxglove Studio's is the same code on @foxglove/roslibjs.
import { parse } from "@lichtblick/rosmsg";
import { MessageReader } from "@lichtblick/rosmsg-serialization";
import * as ROSLIB from "roslib";
import WebSocket from "ws";

// @lichtblick/roslibjs is a browser build that takes the page's WebSocket; node 20 has none, so
// the `ws` package stands in for it (the library itself is unchanged).
globalThis.WebSocket ??= WebSocket;
const { default: lichtblickRoslib } = await import("@lichtblick/roslibjs");

const [url, topic, service, messageType, serviceType, ...rawTopics] = process.argv.slice(2);
const TIMEOUT_MS = 8000;
const report = { lichtblick: {}, roslib: {}, errors: [] };

function timed(what, start) {
  return Promise.race([
    new Promise(start),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), TIMEOUT_MS)),
  ]);
}

async function step(into, name, start) {
  try {
    into[name] = await timed(name, start);
  } catch (error) {
    report.errors.push(`${name}: ${error?.message ?? error}`);
  }
}

function connect(Ros) {
  const ros = new Ros({ url });
  return timed("connection", (resolve, reject) => {
    ros.on("connection", () => resolve(ros));
    ros.on("error", (error) => reject(new Error(`connection error: ${error?.message ?? error}`)));
  });
}

async function asLichtblick() {
  const out = report.lichtblick;
  const ros = await connect(lichtblickRoslib.Ros);
  await step(out, "topicsAndRawTypes", (resolve, reject) => ros.getTopicsAndRawTypes(resolve, reject));
  const result = out.topicsAndRawTypes;
  if (result) {
    out.definitions = {};
    result.topics.forEach((name, index) => {
      const type = result.types[index];
      try {
        const parsed = parse(result.typedefs_full_text[index], { ros2: false });
        new MessageReader(parsed); // as the player builds one per type
        out.definitions[type] = parsed;
      } catch (error) {
        report.errors.push(`definition of ${type} (${name}): ${error?.message ?? error}`);
      }
    });
  }
  await step(out, "nodes", (resolve, reject) => ros.getNodes(resolve, reject));
  out.nodeDetails = {};
  for (const node of out.nodes ?? []) {
    await step(out.nodeDetails, node, (resolve, reject) =>
      ros.getNodeDetails(node, (subscriptions, publications, services) =>
        resolve({ subscriptions, publications, services }), reject),
    );
  }
  await step(out, "serviceType", (resolve, reject) => ros.getServiceType(service, resolve, reject));
  // Messages as the player reads them: `cbor-raw`, each `bytes` through the topic type's reader.
  out.raw = {};
  for (const name of rawTopics) {
    const index = result?.topics.indexOf(name) ?? -1;
    if (index < 0) {
      report.errors.push(`raw: ${name} is not listed`);
      continue;
    }
    const reader = new MessageReader(parse(result.typedefs_full_text[index], { ros2: false }));
    await step(out.raw, name, (resolve) => {
      const topic = new lichtblickRoslib.Topic({ ros, name, compression: "cbor-raw" });
      topic.subscribe((message) => {
        topic.unsubscribe();
        const bytes = new Uint8Array(message.bytes);
        resolve({ byteLength: bytes.byteLength, secs: message.secs, message: plain(reader.readMessage(bytes)) });
      });
    });
  }
  ros.close();
}

/** A decoded message as JSON would carry it (typed arrays as arrays, bigints as numbers). */
function plain(value) {
  return JSON.parse(JSON.stringify(value, (_key, item) =>
    typeof item === "bigint" ? Number(item) : ArrayBuffer.isView(item) ? Array.from(item) : item));
}

async function asRoslib() {
  const out = report.roslib;
  const ros = await connect(ROSLIB.Ros);
  await step(out, "topics", (resolve, reject) => ros.getTopics(resolve, reject));
  await step(out, "topicType", (resolve, reject) => ros.getTopicType(topic, resolve, reject));
  await step(out, "topicsForType", (resolve, reject) => ros.getTopicsForType(messageType, resolve, reject));
  await step(out, "services", (resolve, reject) => ros.getServices(resolve, reject));
  await step(out, "serviceType", (resolve, reject) => ros.getServiceType(service, resolve, reject));
  await step(out, "servicesForType", (resolve, reject) => ros.getServicesForType(serviceType, resolve, reject));
  await step(out, "nodes", (resolve, reject) => ros.getNodes(resolve, reject));
  await step(out, "nodeDetails", (resolve, reject) => ros.getNodeDetails("/hwgateway", resolve, reject));
  await step(out, "params", (resolve, reject) => ros.getParams(resolve, reject));
  await step(out, "actionServers", (resolve, reject) => ros.getActionServers(resolve, reject));
  await step(out, "topicsAndRawTypes", (resolve, reject) => ros.getTopicsAndRawTypes(resolve, reject));
  await step(out, "messageDetails", (resolve, reject) => ros.getMessageDetails(messageType, resolve, reject));
  await step(out, "publishers", (resolve, reject) =>
    new ROSLIB.Topic({ ros, name: topic, messageType }).getPublishers(resolve, reject));
  // The same topics as JSON, to compare with what the raw bytes read as.
  out.json = {};
  for (const name of rawTopics) {
    await step(out.json, name, (resolve) => {
      const subscription = new ROSLIB.Topic({ ros, name });
      subscription.subscribe((message) => {
        subscription.unsubscribe();
        resolve(message);
      });
    });
  }
  ros.close();
}

try {
  await asLichtblick();
  await asRoslib();
} catch (error) {
  report.errors.push(String(error?.message ?? error));
}
// Exit only once the whole report is out: a pipe takes it in pieces.
process.stdout.write(JSON.stringify(report) + "\n", () => process.exit(0));
