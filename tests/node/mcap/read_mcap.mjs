// An independent reader for the record tests: @mcap/core (the Foxglove app's reader) with the
// @mcap/support decompressors. Prints one JSON summary of the file given as the first argument.
import { open } from "node:fs/promises";
import { McapIndexedReader } from "@mcap/core";
import { loadDecompressHandlers } from "@mcap/support";

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
const channels = {};
for (const channel of reader.channelsById.values()) {
  const schema = reader.schemasById.get(channel.schemaId);
  channels[channel.topic] = {
    messageEncoding: channel.messageEncoding,
    schemaName: schema?.name ?? null,
    schemaEncoding: schema?.encoding ?? null,
    count: 0,
  };
}
let previous = -1n;
let ordered = true;
let total = 0;
let decodeErrors = 0;
const decoder = new TextDecoder();
const firstOf = {};
for await (const message of reader.readMessages({})) {
  const topic = reader.channelsById.get(message.channelId).topic;
  channels[topic].count += 1;
  total += 1;
  if (message.logTime < previous) ordered = false;
  previous = message.logTime;
  try {
    const data = JSON.parse(decoder.decode(message.data));
    if (!(topic in firstOf)) firstOf[topic] = { sequence: message.sequence, data };
  } catch {
    decodeErrors += 1;
  }
}
const metadata = {};
for await (const record of reader.readMetadata({})) metadata[record.name] = Object.fromEntries(record.metadata);
const compression = [...new Set(reader.chunkIndexes.map((chunk) => chunk.compression))];
console.log(JSON.stringify({ total, ordered, decodeErrors, channels, metadata, compression, firstOf,
  statistics: { messageCount: Number(reader.statistics?.messageCount ?? -1) } }));
await handle.close();
