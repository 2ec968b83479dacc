// Reads WARC files with warcio (webrecorder's reader, independent of the
// Go writer under test) and prints one JSON line per record it parses:
// the WARC header fields, the block, the HTTP header and the payload as
// warcio sees them, and SHA-1 digests computed here of the block and of
// the payload (the entity body with its chunked transfer coding removed
// by warcio's own dechunker, its content coding kept). A file warcio
// cannot read to its end gets a line {"file", "error"} after the records
// it did read.
//
// usage: node read.mjs FILE...
import fs from "node:fs";
import crypto from "node:crypto";
import {
  WARCParser,
  AsyncIterReader,
  StatusAndHeadersParser,
  HeadersMultiMap,
} from "warcio";

const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

function base32(bytes) {
  let bits = 0, value = 0, out = "";
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  while (out.length % 8) out += "=";
  return out;
}

function sha1(bytes) {
  return "sha1:" + base32(crypto.createHash("sha1").update(bytes).digest());
}

async function httpParts(block) {
  const reader = new AsyncIterReader([block], null);
  const parsed = await new StatusAndHeadersParser().parse(reader, {
    headersClass: HeadersMultiMap,
  });
  if (!parsed) return null;
  let rest = await reader.readFully();
  const headers = [...parsed.headers];
  const te = headers.find(([k]) => k.toLowerCase() === "transfer-encoding");
  if (te && te[1].toLowerCase() === "chunked") {
    rest = await new AsyncIterReader([rest], null, true).readFully();
  }
  return { statusline: parsed.statusline, headers, payload: rest };
}

for (const file of process.argv.slice(2)) {
  try {
    const parser = new WARCParser(fs.createReadStream(file), {
      keepHeadersCase: true,
      parseHttp: false,
    });
    for await (const record of parser) {
      const block = await record.readFully(false);
      const out = {
        file,
        offset: parser.offset,
        version: record.warcHeaders.statusline,
        headers: [...record.warcHeaders.headers],
        contentLength: record.warcContentLength,
        block: Buffer.from(block).toString("base64"),
        blockDigest: sha1(block),
      };
      const type = record.warcType;
      if (block.length && (type === "request" || type === "response" || type === "revisit")) {
        const http = await httpParts(block);
        if (http) {
          out.httpStatusline = http.statusline;
          out.httpHeaders = http.headers;
          out.payload = Buffer.from(http.payload).toString("base64");
          out.payloadDigest = sha1(http.payload);
        }
      }
      console.log(JSON.stringify(out));
    }
  } catch (e) {
    console.log(JSON.stringify({ file, error: String(e && e.stack || e) }));
  }
}
