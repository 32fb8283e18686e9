// What the worker's JSON packs (lab/page/wire.py): a long list of floats comes as {"f64": base64}, its values as
// little-endian IEEE doubles (NaN where the list had null), because printing floats is the dearest part of
// writing JSON under Pyodide. `unpacked` gives such a list back as an Array of the same numbers; any other value
// as it is.

const little = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f;  // this machine's doubles are little-endian

export function unpacked(value) {
  if (value === null || typeof value !== "object" || typeof value.f64 !== "string") return value;
  const chars = atob(value.f64);
  const bytes = new Uint8Array(chars.length);
  for (let i = 0; i < chars.length; i++) bytes[i] = chars.charCodeAt(i);
  if (!little) for (let i = 0; i < bytes.length; i += 8) bytes.subarray(i, i + 8).reverse();
  return Array.from(new Float64Array(bytes.buffer));
}
