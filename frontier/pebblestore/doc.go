// Package pebblestore is a frontier.Store on disk, in a pebble database
// (github.com/cockroachdb/pebble/v2): a crawl that stops — cleanly, killed,
// or with its machine — resumes from what was made durable.
//
//	s, err := pebblestore.Open("crawl.db", pebblestore.Options{})
//	...
//	f := frontier.New(frontier.Config{Store: s})
//
// # Layout
//
// A store is a directory holding pebble's files and heed.lock. Its keys
// fall in keyspaces by their first byte:
//
//	v                the store's format ("heed pebblestore 4"); Open reads
//	                 format 3 too (below), and refuses others
//	c                the Checkpoint of the last Done
//	d len key due at n
//	                 an item of the key's due part, queued or leased (below)
//	k key            the key's record: the items scheduled, sitemaps and
//	                 sitemap URLs counted against its limits, whether it was
//	                 given up, where its queue lies, its revisit state
//	                 (frontier.Lease.Revisiting, revisit.Host's encoding,
//	                 when not zero) and its pacing state
//	                 (ratelimit.HostState, every field, in package
//	                 frontier/codec's encoding)
//	m name           a value of SetMeta
//	n                how many URLs were seen, as of the last sync: sizes the
//	                 filter on Open
//	q len key seq    an item of the key's run, queued or leased
//	s URL            a URL seen (the canonical URL itself)
//
// Items (in d and q) are the frontier.Item, all its fields but Key, Due
// and Visit included, in package frontier/codec's encoding.
//
// # Queues
//
// A key's items are handed out by Due, then in the order they came. They
// lie in two parts, whose keys sort by (Due, arrival) each, merged as they
// are claimed:
//
//   - The run holds the items that came in the order of their Due: new
//     URLs, which the Frontier stamps with their admission time, and
//     anything added while the run is empty. Its entries are keyed by the
//     politeness key, after its length, then the item's big-endian
//     sequence number, in the order they came: a key's run lies in order
//     in a range of its own. A key's record holds the sequence numbers of
//     its run (items added go at the tail, items claimed leave at the
//     head), so an entry is found without a scan, and a claim that reads
//     its item from pebble reads the next items of the run too, in one
//     seek, holding them in memory for the claims that follow; an item
//     added to a run short enough to be held whole is held as it is
//     added. Only queued entries are held, and a queued entry does not
//     change until it is claimed.
//   - The due part holds the items that came out of that order: revisits,
//     which a Done queues (Outcome.Revisit), items added or requeued
//     with a Visit (so that every item EditQueued may change lies
//     there), and items added due earlier than the run's last. Its entries are keyed by the politeness key,
//     then the item's position: its Due in Unix nanoseconds (the zero time
//     and times before 1678 first, times after 2262 last, in their
//     order), the run's tail when it came (which orders it among the run's
//     items of the same Due), and its number among the key's due items.
//     The Store keeps the position of the first in memory; a claim of it
//     reads it, and finds the next, in one seek.
//
// Two parts, not one range keyed by Due, because a crawl's new URLs are
// most of its claims and a claim of the run's next entry is a Get of a key
// known in memory, which the tables' bloom filters answer mostly without a
// read, while finding the next entry of a range keyed by Due takes a seek
// through every level: in BenchmarkStore, ten million URLs leased and done
// at about 15% fewer URLs/s with a seek for each claim.
//
// The Schedule learns when each key's first item is due (Schedule.Head):
// at once while its run has items, which are due once admitted (a run
// item due later is found so when the key is claimed, Schedule.ClaimDue),
// else when the first of its due part is. A key given up, or whose
// robots.txt is unreachable, hands out all its items at once, in order,
// whatever their Due.
//
// Format 3, written before revisits, is format 4 without due entries, and
// with records that do not describe a due part: Open reads it as it is,
// and marks it format 4, which the builds that wrote format 3 refuse.
//
// Add looks a URL up in a bloom filter over the seen-set, in memory, first:
// a URL never seen is found new there in the common case, without touching
// pebble, let alone the disk. The filter takes 1 to 2 bytes a URL, outside
// the Go heap, and is rebuilt from the seen-set on Open: 1.8 s for ten
// million URLs. A URL the filter lets by is looked up next in a cache of
// the 64-bit hashes of the URLs seen most recently (Options.SeenCache):
// most links a crawl finds lead to pages it found a little earlier. Only
// what the cache does not hold (false positives of the filter, 5 to 10%
// of new URLs, and URLs seen long ago) is looked up in pebble, whose
// tables have bloom filters too. The cache may take a URL never seen for
// one seen when its hash equals another's: at its default size, about
// once in 2^43 lookups.
//
// # Operations
//
// Each operation is one pebble batch, applied atomically: Add marks each
// new URL seen and queues it, with its key's record; Done deletes the item's
// entry and writes the key's record and the checkpoint, and the entry of
// its revisit (Outcome.Revisit) if it has one, whose URL stays seen;
// Requeue rewrites the item's entry with what it has been through
// (Retries, Redirects, ..., Visit and Due) and puts it back at its place,
// the front of its run or its position in the due part (an item of the
// run given a Visit moves to the due part, at its place); EditQueued reads
// the key's due part and rewrites each item edited, at its new position
// (its new Due, its arrival kept), with the key's record, whose first due
// position may move; GiveUp marks the key's record,
// and its queued items are then claimed and done one by one, to be
// reported. Claim writes nothing: a leased item keeps its
// entry — just before its run's head, or at its position in the due part
// — until its lease ends, and so it is at its place in its queue, with the
// history it had when claimed, if the process stops first. Leases themselves live in memory: they die with the
// process, as the Store's contract allows.
//
// # Durability
//
// Batches are applied without waiting for the disk: what one operation did
// is visible to the next at once. A background loop makes them durable by
// group commit: at most Options.SyncInterval (100 ms) after a write, it
// calls Options.BeforeSync and syncs pebble's log, making every write of the
// interval durable with one fsync. Sync, Checkpoint, SetMeta and Close sync
// at once. After a crash, what survives is every operation up to the last
// sync at least, and possibly some after it, always whole operations in the
// order they were made; Checkpoint returns the checkpoint of the last Done
// made durable.
//
// BeforeSync runs before each of the Store's syncs, with Done and Requeue calls
// that carry a checkpoint held back until the sync ends: a crawl flushes and
// syncs its output there, so that after a crash of the machine the output
// is not behind the checkpoint. pebble also syncs its log when it moves to a
// new one (every MemTableSize bytes of writes), without BeforeSync; what
// that sync makes durable early is at most one SyncInterval of Done calls. A crash
// of the process alone loses nothing that reached the operating system:
// a crawl that writes its output before the Done carrying its offset is
// safe from it.
//
// Open after a stop puts back the items leased at the stop at their places
// in their queues, and restores every key into a frontier.Schedule, with
// when its first item is due (a seek for each key with a due part), which
// makes each wait a full Delay from the reopening, since a request to it
// may have been under way.
//
// # Failures
//
// Once a write, a sync or BeforeSync fails, or pebble meets an error it
// cannot go on from, the Store is failed: every later call returns an
// error wrapping ErrFailed and that first failure, and a crawl stops with
// it. The Store makes nothing durable after the failure; what was durable
// before it opens again. pebble, made for processes that die with their
// disk, reports such errors by calling Logger.Fatalf (a corrupt table, a
// failed commit), which would exit the process, or by panicking (a log it
// cannot write); the Store takes both as its failure instead, and after a
// panic leaves the database as it is, unclosed, since pebble may hold its
// locks: the process should exit soon after. One failure pebble does not
// survive even so: a log that cannot be written just as pebble moves to a
// new one (every MemTableSize bytes) ends the process with a fatal error in
// pebble, which no recover catches. That is a crash like any other: what
// was synced opens again.
//
// A directory is open in one Store at a time: Open takes an flock on
// heed.lock, whose content names the holder, and a second Open, in this
// process or another, fails with ErrLocked and that name. The lock dies
// with its process: a lock file left by a crawl that was killed does not
// block the next.
//
// # Memory
//
// The items and the seen-set live on disk. In memory the Store keeps its
// Schedule, the filter over the seen-set, the cache of recent URLs (at
// most Options.SeenCache, outside the Go heap, growing with the seen-set),
// the items held ahead of their queues' heads (at most Options.ReadAhead,
// counted by the arrays that hold them), and, for each key with items in
// its run or out, where its queue lies (48 bytes and a map entry, and 64
// more for a key with a due part). A key whose items all wait in its due
// part, as a continuous crawl's keys do between visits, costs nothing
// beside its Schedule's state: its queue is read back from its record
// when it is claimed or changed. pebble keeps its block cache
// (Options.CacheSize) and two memtables (Options.MemTableSize) in memory
// of its own, outside the Go heap.
//
// BenchmarkStore measures a crawl's use of a Store, ten million URLs over
// 100,000 hosts added, leased and done, on two cores: with the default
// Options, about 59,000 URLs/s and a peak RSS of about 187 MB (of which
// the Go heap about 120, the Schedule's 100,000 keys the largest part of
// what it holds; pebble's cache and memtables 24; the filter 16; the seen
// cache 2, as no link leads to a page seen), and 450 MB on disk at the
// end: tables are not compressed, which costs a crawl more CPU than the
// bytes it saves (BenchmarkCrawlShape). Its claims go round 100,000 hosts
// of 100 items each, the read-ahead's worst case: most read their item
// alone. glibc's malloc keeps memory that pebble freed in arenas of its
// own per thread: the benchmark runs with MALLOC_ARENA_MAX=2, as crawl
// does, which takes about 20 MB off the peak.
package pebblestore
