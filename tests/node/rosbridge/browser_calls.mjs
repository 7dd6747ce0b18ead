// Every rosapi call of Lichtblick's (and Foxglove Studio's) Rosbridge source and of roslib's helpers,
// and subscriptions, made from a web page with the published clients unchanged: roslib 2.1.0 and
// Lichtblick's message parser and reader, bundled by esbuild for the browser as a web app bundles
// them, and @lichtblick/roslibjs 1.0.0's own browser build (window.roslib, loaded by a script tag).
// tests/test_rosbridge_browser.py serves the page from another origin and calls `window.run` once.
import { parse } from "@lichtblick/rosmsg";
import { MessageReader } from "@lichtblick/rosmsg-serialization";
import * as ROSLIB from "roslib";

const TIMEOUT_MS = 8000;

function timed(what, start) {
  return Promise.race([
    new Promise(start),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), TIMEOUT_MS)),
  ]);
}

function connect(Ros, url) {
  const ros = new Ros({ url });
  return timed(`connection to ${url}`, (resolve, reject) => {
    ros.on("connection", () => resolve(ros));
    ros.on("error", (error) => reject(new Error(`connection error: ${error?.message ?? error}`)));
  });
}

/** Runs the named calls at once, each into `into[name]`; a failure is an entry of `errors`. */
async function all(into, errors, calls) {
  await Promise.all(Object.entries(calls).map(async ([name, start]) => {
    try {
      into[name] = await timed(name, start);
    } catch (error) {
      errors.push(`${name}: ${error?.message ?? error}`);
    }
  }));
}

/** A decoded message as JSON would carry it (typed arrays as arrays, bigints as numbers). */
function plain(value) {
  return JSON.parse(JSON.stringify(value, (_key, item) =>
    typeof item === "bigint" ? Number(item) : ArrayBuffer.isView(item) ? Array.from(item) : item));
}

/**
 * Lichtblick's RosbridgePlayer's calls: each topic's definition parsed into a reader, as the player
 * does, and a `cbor-raw` subscription read by its topic's reader.
 */
async function asLichtblick(url, { service, rawTopic }, errors) {
  const out = { nodeDetails: {}, parsed: {} };
  const ros = await connect(window.roslib.Ros, url);
  const readers = {};
  await all(out, errors, {
    topicsAndRawTypes: (resolve, reject) => ros.getTopicsAndRawTypes((result) => {
      result.topics.forEach((name, index) => {
        try {
          const definition = parse(result.typedefs_full_text[index], { ros2: false });
          readers[name] = new MessageReader(definition);
          out.parsed[name] = definition.length;
        } catch (error) {
          errors.push(`definition of ${result.types[index]} (${name}): ${error?.message ?? error}`);
        }
      });
      resolve(result);
    }, reject),
    nodes: (resolve, reject) => ros.getNodes(resolve, reject),
    serviceType: (resolve, reject) => ros.getServiceType(service, resolve, reject),
    raw: (resolve) => {
      const topic = new window.roslib.Topic({ ros, name: rawTopic, compression: "cbor-raw" });
      topic.subscribe((message) => {
        topic.unsubscribe();
        resolve({ bytes: new Uint8Array(message.bytes), secs: message.secs });
      });
    },
  });
  if (out.raw && !readers[rawTopic]) {
    errors.push(`raw: no reader for ${rawTopic}`);
  } else if (out.raw) {
    const { bytes, secs } = out.raw;
    out.raw = { byteLength: bytes.byteLength, secs, message: plain(readers[rawTopic].readMessage(bytes)) };
  }
  await all(out.nodeDetails, errors, Object.fromEntries((out.nodes ?? []).map((node) => [node, (resolve, reject) =>
    ros.getNodeDetails(node, (subscriptions, publications, services) =>
      resolve({ subscriptions, publications, services }), reject)])));
  ros.close();
  return out;
}

/** Each of roslib's rosapi helpers, its parameter calls and a JSON subscription. */
async function asRoslib(url, { topic, service, messageType, serviceType }, errors) {
  const out = {};
  const ros = await connect(ROSLIB.Ros, url);
  const param = new ROSLIB.Param({ ros, name: "/hwgateway/version" });
  // The gateway's parameters are read-only: a set or delete is answered with its refusal.
  const refused = (resolve) => [() => resolve({ refused: false }), (error) => resolve({ refused: String(error) })];
  await all(out, errors, {
    topics: (resolve, reject) => ros.getTopics(resolve, reject),
    topicType: (resolve, reject) => ros.getTopicType(topic, resolve, reject),
    topicsForType: (resolve, reject) => ros.getTopicsForType(messageType, resolve, reject),
    services: (resolve, reject) => ros.getServices(resolve, reject),
    serviceType: (resolve, reject) => ros.getServiceType(service, resolve, reject),
    servicesForType: (resolve, reject) => ros.getServicesForType(serviceType, resolve, reject),
    requestDetails: (resolve, reject) => ros.getServiceRequestDetails(serviceType, resolve, reject),
    responseDetails: (resolve, reject) => ros.getServiceResponseDetails(serviceType, resolve, reject),
    nodes: (resolve, reject) => ros.getNodes(resolve, reject),
    nodeDetails: (resolve, reject) => ros.getNodeDetails("/hwgateway", resolve, reject),
    params: (resolve, reject) => ros.getParams(resolve, reject),
    actionServers: (resolve, reject) => ros.getActionServers(resolve, reject),
    topicsAndRawTypes: (resolve, reject) => ros.getTopicsAndRawTypes(resolve, reject),
    messageDetails: (resolve, reject) => ros.getMessageDetails(messageType, resolve, reject),
    publishers: (resolve, reject) => new ROSLIB.Topic({ ros, name: topic, messageType }).getPublishers(resolve, reject),
    paramGet: (resolve, reject) => param.get(resolve, reject),
    paramSet: (resolve) => param.set("7", ...refused(resolve)),
    paramDelete: (resolve) => param.delete(...refused(resolve)),
    message: (resolve) => {
      const subscription = new ROSLIB.Topic({ ros, name: topic });
      subscription.subscribe((message) => {
        subscription.unsubscribe();
        resolve(message);
      });
    },
  });
  ros.close();
  return out;
}

/** Both clients against each of `urls` (the rosbridge port, the HTTP port's /rosbridge) at once; one report. */
async function run(urls, names) {
  const errors = [];
  const endpoints = await Promise.all(urls.map(async (url) => {
    const mine = [];
    try {
      const [lichtblick, roslib] = await Promise.all([asLichtblick(url, names, mine), asRoslib(url, names, mine)]);
      return { url, lichtblick, roslib };
    } catch (error) {
      mine.push(String(error?.message ?? error));
      return { url };
    } finally {
      errors.push(...mine.map((error) => `${url}: ${error}`));
    }
  }));
  return { errors, endpoints };
}

window.run = run;
