// Package robots parses robots.txt files and answers whether a crawler may
// fetch a URL, following RFC 9309 and, where the RFC is silent, Google's
// reference parser (github.com/google/robotstxt).
//
// Parse never fails: it reads the first MaxSize bytes, accepts LF, CR and
// CRLF line ends, a byte order mark, comments, keys in any case with the
// misspellings and prefixes Google accepts ("Disallowed", "dissalow",
// "user agent"), and a missing colon on two-word lines; it ignores
// everything else. Lines Parse does not understand never end a group.
//
// A Robots answers for an agent through the Group that applies to it: the
// groups naming the agent's product token (exactly, case-insensitively,
// never by prefix) merged, else the "*" groups merged, else nothing, which
// allows all. Within a group the rule with the longest pattern that matches
// the URL's path, parameters and query decides, Allow winning ties; '*'
// matches any run of octets and a final '$' anchors the end. Paths and
// patterns are compared after percent-encoding normalisation (RFC 9309
// §2.2.2): non-ASCII octets %-encoded, %-encoded unreserved characters
// decoded, and %2A and %24 in a pattern matching a literal '*' and '$'.
// /robots.txt is always allowed.
//
// Matching costs at most time linear in the URL's length per rule, however
// many wildcards a pattern holds, and Group.Allowed does not allocate, so
// a crawler can check every URL it sees.
//
// A Robots and its Groups are immutable and safe for concurrent use. A nil
// *Robots or *Group allows everything; AllowAll and DisallowAll stand for
// the outcomes of robots.txt fetches that fail with 4xx and 5xx statuses.
//
// The package imports the standard library only. Fetching robots.txt,
// caching it per authority and reading what each answer means (RFC 9309
// §2.3–2.4) is the business of package github.com/heedcrawl/heed/robots/gate.
package robots
