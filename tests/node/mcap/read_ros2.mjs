// An independent ROS 2 decoder for the ros2 recording tests: @mcap/core reads the bag's MCAP file,
// @foxglove/rosmsg parses each ros2msg schema and @foxglove/rosmsg2-serialization decodes every CDR
// message (the Foxglove app's own path). Prints one JSON summary: per topic its schema, count and
// every decoded message (BigInt as a decimal string when it is beyond 2^53, typed arrays as arrays).
import { open } from "node:fs/promises";
import { McapIndexedReader } from "@mcap/core";
import { loadDecompressHandlers } from "@mcap/support";
import { parse } from "@foxglove/rosmsg";
import { MessageReader } from "@foxglove/rosmsg2-serialization";

const handle = await open(process.argv[2], "r");
const readable = {
  size: async () => BigInt((await handle.stat()).size),
  read: async (offset, length) => {
    const buffer = new Uint8Array(Number(length));
    await handle.read(buffer, 0, Number(length), Number(offset));
    return buffer;
  },
};
const reader = await McapIndexedReader.Initialize({ readable, decompressHandlers: await loadDecompressHandlers() });
const readers = new Map();
const topics = {};
for (const channel of reader.channelsById.values()) {
  const schema = reader.schemasById.get(channel.schemaId);
  const text = new TextDecoder().decode(schema.data);
  readers.set(channel.id, new MessageReader(parse(text, { ros2: true })));
  topics[channel.topic] = { type: schema.name, schemaEncoding: schema.encoding, messageEncoding: channel.messageEncoding,
    hash: channel.metadata.get("topic_type_hash") ?? null, count: 0, messages: [] };
}
const plain = (value) => {
  if (typeof value === "bigint") return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (ArrayBuffer.isView(value)) return Array.from(value, plain);
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, plain(item)]));
  }
  return value;
};
let total = 0;
let decodeErrors = 0;
for await (const message of reader.readMessages({})) {
  const topic = reader.channelsById.get(message.channelId).topic;
  total += 1;
  topics[topic].count += 1;
  try {
    topics[topic].messages.push(plain(readers.get(message.channelId).readMessage(message.data)));
  } catch (error) {
    decodeErrors += 1;
    console.error(`${topic}: ${error}`);
  }
}
console.log(JSON.stringify({ profile: reader.header.profile, total, decodeErrors, topics }));
await handle.close();
