// Validate glTF / GLB files with the Khronos glTF Validator (npm package `gltf-validator`).
// Usage: node gltf_validate.cjs FILE...   Prints one JSON line per file with the issue counts
// and the first messages; exits 1 when any file has an error, 0 otherwise.
"use strict";
const fs = require("fs");
const path = require("path");
const validator = require("gltf-validator");

async function main(files) {
  let failed = false;
  for (const file of files) {
    const report = await validator.validateBytes(new Uint8Array(fs.readFileSync(file)), {
      uri: path.basename(file),
      maxIssues: 50,
    });
    const issues = report.issues;
    failed = failed || issues.numErrors > 0;
    console.log(JSON.stringify({
      file,
      validatorVersion: report.validatorVersion,
      numErrors: issues.numErrors,
      numWarnings: issues.numWarnings,
      numInfos: issues.numInfos,
      messages: issues.messages.slice(0, 10).map((m) => `${m.code} ${m.pointer || ""} ${m.message}`),
    }));
  }
  process.exit(failed ? 1 : 0);
}

main(process.argv.slice(2)).catch((error) => {
  console.error(String(error));
  process.exit(2);
});
