// The strongest peer's whole per-line work, timed: Node's JSON.parse of every line, read the
// way the TypeScript SDK reads an agent's stdout (readline over a stream, one JSON.parse a line).
//
//   node benches/node_parse.mjs stream FILE      one protocol frame per line (live ingest)
//   node benches/node_parse.mjs recording FILE   a switchboard recording: the header, then each
//                                                entry parsed and its inner `line` parsed too
//
// Prints one JSON object on stdout: {"lines", "ns_per_line", "seconds", "peak_rss"} (seconds
// from the first byte read to the last line parsed; peak RSS as Node reports it).
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";

const [mode, path] = process.argv.slice(2);
if (!["stream", "recording"].includes(mode) || !path) {
  console.error("usage: node benches/node_parse.mjs stream|recording FILE");
  process.exit(2);
}
const start = process.hrtime.bigint();
const rl = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
let lines = 0;
let errors = 0;
let sink = 0;
let first = true;
for await (const line of rl) {
  if (line.length === 0) continue;
  try {
    if (mode === "recording") {
      const entry = JSON.parse(line);
      if (first) {
        first = false; // the header
      } else if (typeof entry.line === "string") {
        try {
          sink += JSON.parse(entry.line) === null ? 0 : 1;
        } catch {
          errors += 1; // a non-JSON stderr or note line still cost its parse
        }
      }
    } else {
      sink += JSON.parse(line) === null ? 0 : 1;
    }
  } catch {
    errors += 1;
  }
  lines += 1;
}
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const peak = process.resourceUsage().maxRSS * 1024;
console.error(
  `node ${process.version} JSON.parse (${mode}): ${lines} lines in ${seconds.toFixed(2)} s, ` +
    `${((seconds * 1e9) / lines).toFixed(0)} ns per line, ${errors} not JSON, sink ${sink}`,
);
console.log(JSON.stringify({ lines, ns_per_line: (seconds * 1e9) / lines, seconds, peak_rss: peak }));
