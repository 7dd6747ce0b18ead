// Runs the JSON Schema parser of Foxglove Studio (the one Lichtblick forked), unchanged, over schemas.
//
// The apps parse a `jsonschema` channel or service with `parseJsonSchema` from their own
// `@foxglove/mcap-support` / `@lichtblick/mcap-support` workspace package, which neither project
// publishes. The closest published package that holds it unchanged is `@foxglove/studio-base`
// (1.48.0): its webpack bundle `assets/index.js` contains the module verbatim. This script cuts that
// module out of the bundle by its webpack markers and runs it as it is, with the same
// `@protobufjs/base64` module the bundle imports.
//
// stdin: JSON [{"name": key, "type": schemaName (default: name), "schema": schemaText, "samples": [messageText, ...]}]
// stdout: JSON [{"name", "error": null | message, "datatypes": {type: [field, ...]}, "samples": [value, ...]}]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const base64 = require("@protobufjs/base64");

const START = ";// CONCATENATED MODULE: ../mcap-support/src/parseJsonSchema.ts";

/** The parser function, taken unchanged from the published bundle. */
export function loadParseJsonSchema() {
  const bundle = readFileSync(require.resolve("@foxglove/studio-base/assets/index.js"), "utf8");
  const start = bundle.indexOf(START);
  if (start < 0) {
    throw new Error("parseJsonSchema.ts not found in @foxglove/studio-base's bundle");
  }
  const end = bundle.indexOf("\n// EXTERNAL MODULE:", start);
  const source = bundle.slice(start, end);
  if (!source.includes("function parseJsonSchema(rootJsonSchema, rootTypeName)")) {
    throw new Error("the bundle's parseJsonSchema module has an unexpected shape");
  }
  // The module's only free name is `base64` (webpack's binding of @protobufjs/base64).
  return new Function("base64", `${source}\nreturn parseJsonSchema;`)(base64);
}

function plainDatatypes(datatypes) {
  const out = {};
  for (const [name, { definitions }] of datatypes) {
    out[name] = definitions;
  }
  return out;
}

function plainValue(value) {
  return JSON.parse(
    JSON.stringify(value, (_key, item) => (item instanceof Uint8Array ? Array.from(item) : item)),
  );
}

const parseJsonSchema = loadParseJsonSchema();
const requests = JSON.parse(readFileSync(0, "utf8"));
const results = requests.map(({ name, type = name, schema, samples = [] }) => {
  try {
    // As parseChannel does for a `json` channel with a `jsonschema` schema.
    const { datatypes, postprocessValue } = parseJsonSchema(JSON.parse(schema), type);
    return {
      name,
      error: null,
      datatypes: plainDatatypes(datatypes),
      samples: samples.map((text) => plainValue(postprocessValue(JSON.parse(text)))),
    };
  } catch (error) {
    return { name, error: String(error?.message ?? error), datatypes: {}, samples: [] };
  }
});
process.stdout.write(JSON.stringify(results));
