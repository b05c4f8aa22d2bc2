/**
 * A BER-encoded structure with every indefinite length (0x80 ... 00 00) rewritten as a definite one.
 * Xcode's StoreKit testing signs app receipts with indefinite lengths; the App Store's receipts use
 * definite lengths. Apple's library's test receipts (tests/resources/xcode) are Xcode's: this gives
 * the same receipt as the App Store would encode it (apple/app-store-server-library-node#417: with
 * jsrsasign 11.1.2 and later, ReceiptUtility reads only the latter).
 */
export function withDefiniteLengths(der: Buffer): Buffer {
  const { out, end } = reencode(der, 0);
  if (end !== der.length) throw new Error(`trailing bytes after the structure (${der.length - end})`);
  return out;
}

function lengthBytes(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function reencode(buf: Buffer, start: number): { out: Buffer; end: number } {
  const tag = buf[start];
  if ((tag & 0x1f) === 0x1f) throw new Error(`multi-byte tag at ${start}`);
  let p = start + 1;
  const first = buf[p++];
  const indefinite = first === 0x80;
  let length = first;
  if (!indefinite && first & 0x80) {
    length = 0;
    for (let i = 0; i < (first & 0x7f); i++) length = length * 256 + buf[p++];
  }
  if ((tag & 0x20) === 0) {
    if (indefinite) throw new Error(`a primitive value with an indefinite length at ${start}`);
    return { out: Buffer.concat([Buffer.from([tag]), lengthBytes(length), buf.subarray(p, p + length)]), end: p + length };
  }
  const children: Buffer[] = [];
  let q = p;
  const done = indefinite ? () => buf[q] === 0 && buf[q + 1] === 0 : () => q >= p + length;
  while (!done()) {
    const child = reencode(buf, q);
    children.push(child.out);
    q = child.end;
  }
  if (indefinite) q += 2;
  const body = Buffer.concat(children);
  return { out: Buffer.concat([Buffer.from([tag]), lengthBytes(body.length), body]), end: q };
}
