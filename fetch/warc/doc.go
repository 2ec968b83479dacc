// Package warc writes the HTTP exchanges of a crawl to WARC files, in the
// WARC/1.1 format the IIPC specifies
// (https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/).
//
// A Writer is a fetch.Recorder: set it as Fetcher.Recorder and every
// request the Fetcher makes (pages, robots.txt, sitemaps, redirects, error
// statuses) is archived as a 'request' and a 'response' record that name
// each other in WARC-Concurrent-To. Their blocks are the bytes as they
// crossed the connection (inside TLS for https): the response with its
// chunked transfer coding and its content coding as sent. Each record has
// WARC-Record-ID (urn:uuid), WARC-Date (UTC, microseconds; the same for
// both records of an exchange: when the request was about to be sent),
// WARC-Target-URI, WARC-IP-Address, Content-Type
// (application/http;msgtype=request or response), Content-Length, and
// WARC-Block-Digest and WARC-Payload-Digest, both SHA-1 in base32. The
// payload is the entity body: the transfer coding removed, the content
// coding kept. A response the fetcher stopped reading (its body limit, a
// timeout, a broken connection) holds what was read and says why in
// WARC-Truncated.
//
// With Options.Dedup, a response whose payload digest equals that of a
// response already written by the Writer is stored as a 'revisit' record
// of the profile
// http://netpreserve.org/warc/1.1/revisit/identical-payload-digest: its
// block is the response's header alone (marked WARC-Truncated: length, as
// the profile requires), and WARC-Refers-To, WARC-Refers-To-Target-URI and
// WARC-Refers-To-Date name the record that holds the payload. Empty and
// truncated payloads are never deduplicated.
//
// # Files
//
// Files are named <prefix>-<UTC timestamp>-<serial>.warc.gz, for instance
// heed-20260102150405-00000.warc.gz: the prefix "heed" unless
// Options.Prefix says otherwise, the 14-digit time the file was begun and
// a serial number one more than the largest of any file of that prefix
// already in the directory, so a Writer resuming a crawl in the same
// directory starts a new file and never overwrites one. Each file begins
// with a 'warcinfo' record: software, hostname, format, conformsTo, and
// the crawl's settings from Options.Info. A file is closed and the next
// one begun when the next exchange would take it past Options.MaxSize (1
// GiB by default); an exchange larger than that goes alone into a file.
//
// Every record is one gzip member, and the records of an exchange are
// written with one write(2) call under the Writer's lock, so records of
// concurrent fetches never interleave. A process killed at any moment
// leaves every file readable up to its last complete record: what write
// returned is in the operating system's keeping, and a cut can only fall
// inside the last member. Fsync policy: a file is synced when it is
// closed (rotation and Close); with Options.Sync, also after every
// exchange and the directory after every new file, so that a power loss,
// not only a crash, loses no exchange that Record reported written.
//
// After a failed write the Writer stops: that Record and every later one
// return the error, since records appended after a partial one would be
// unreachable to readers.
package warc
