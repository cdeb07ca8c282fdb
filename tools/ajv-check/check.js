#!/usr/bin/env node
// Compiles JSON Schemas the way a JavaScript consumer would: Ajv's draft
// 2020-12 class in its default (strict) mode, with ajv-formats for the
// standard formats. Reads one JSON object `{name: schema, ...}` on stdin and
// prints `{name: null | "why it does not compile", ...}` on stdout. Exits 0
// when every schema compiles, 1 when one does not, 2 on bad input.
"use strict";
const Ajv2020 = require("ajv/dist/2020");
const addFormats = require("ajv-formats");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  let schemas;
  try {
    schemas = JSON.parse(input);
  } catch (e) {
    process.stderr.write(`stdin is not JSON: ${e.message}\n`);
    process.exit(2);
  }
  if (schemas === null || typeof schemas !== "object" || Array.isArray(schemas)) {
    process.stderr.write("stdin must be a JSON object of named schemas\n");
    process.exit(2);
  }
  const verdicts = {};
  let failed = false;
  for (const [name, schema] of Object.entries(schemas)) {
    // A fresh instance per schema: each carries its own `$id`.
    const ajv = new Ajv2020();
    addFormats(ajv);
    try {
      ajv.compile(schema);
      verdicts[name] = null;
    } catch (e) {
      verdicts[name] = e.message;
      failed = true;
    }
  }
  process.stdout.write(JSON.stringify(verdicts, null, 2) + "\n");
  process.exit(failed ? 1 : 0);
});
