// The worker's snapshot checks, run under Node.js on files instead of in a browser's worker (read by
// test_worker_snapshot.py). The functions are worker.js's own text, cut out from `fetchSnapshot` to the end of
// `layIn` and given the constants the build wrote (or those a case names): nothing of the worker is copied here.
//   node worker_snapshot.mjs WORKER_JS CASES_JSON
// Each case: {file, name, bytes, imageBytes, heap?}: `file` is read as the snapshot's body, `name` is the URL the
// worker would fetch it from (its sha256 is checked against it), `bytes` and `imageBytes` are SNAPSHOT_BYTES and
// SNAPSHOT_IMAGE_BYTES; with `heap` (a file: the runtime's memory before the restore), the pages are also laid in
// as Pyodide's restore would have them laid in. Prints one JSON line a case: {ok, error, heap?} (`heap`: the
// sha256 of the heap laid in, from the header's end).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

const [workerPath, casesPath] = process.argv.slice(2);
const worker = readFileSync(workerPath, "utf8");
const start = worker.indexOf("async function fetchSnapshot(");
const layIn = worker.indexOf("function layIn(");
const end = worker.indexOf("\n}\n", layIn) + 3;
if (start < 0 || layIn < start || end < layIn) throw new Error(`${workerPath}: fetchSnapshot ... layIn not found`);
const text = worker.slice(start, end);

function validator(constants) {
  const self = { crypto: globalThis.crypto, prefixLabBoot: {} };
  const make = new Function("SNAPSHOT", "SNAPSHOT_BYTES", "SNAPSHOT_IMAGE_BYTES", "self",
    `${text}\nreturn { fetchSnapshot, checkSnapshot, layIn };`);
  return make(constants.name, constants.bytes, constants.imageBytes, self);
}

for (const c of JSON.parse(readFileSync(casesPath, "utf8"))) {
  const { fetchSnapshot, checkSnapshot, layIn } = validator(c);
  const body = readFileSync(c.file);
  const response = new Response(body);
  const out = { ok: false, error: null };
  try {
    // As restoreSnapshot: the bytes' size and form, then their sha256; then, given the runtime's memory, the
    // pages laid into it (layIn's own check of the pages the runtime holds comes first).
    const pages = await fetchSnapshot(response, 0);
    await checkSnapshot(pages.bytes);
    if (c.heap) {
      const heap = new Uint8Array(readFileSync(c.heap));
      let header = null;
      layIn({ HEAPU8: heap }, (bytes) => { header = bytes.length; return "state"; }, pages);
      out.header = header;
      out.heap = createHash("sha256").update(heap).digest("hex");
    }
    out.ok = true;
  } catch (err) {
    out.error = String(err?.message ?? err);
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
