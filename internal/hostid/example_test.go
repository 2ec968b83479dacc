package hostid_test

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/heedcrawl/heed/internal/hostid"
)

// Every spelling of one host is one host: one queue, one robots.txt, one
// politeness budget.
func Example() {
	for _, raw := range []string{
		"http://H.Example:80/a",
		"http://h.example./b",
		"https://bücher.example/",
		"http://[2001:DB8::1]:8080/",
		"http://h.example:0/",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			fmt.Println(err)
			continue
		}
		host, err := hostid.Host(u)
		if errors.Is(err, hostid.ErrPort) {
			fmt.Printf("%s: refused (%v)\n", raw, err)
			continue
		}
		origin, _ := hostid.Authority(u)
		fmt.Printf("%s: host %s, robots.txt of %s\n", raw, host, origin)
	}
	fmt.Println(hostid.RegistrableDomain("a.blog.example.co.uk"))
	// Output:
	// http://H.Example:80/a: host h.example, robots.txt of http://h.example
	// http://h.example./b: host h.example, robots.txt of http://h.example
	// https://bücher.example/: host xn--bcher-kva.example, robots.txt of https://xn--bcher-kva.example
	// http://[2001:DB8::1]:8080/: host [2001:db8::1]:8080, robots.txt of http://[2001:db8::1]:8080
	// http://h.example:0/: refused (hostid: invalid port "0": out of range)
	// example.co.uk
}
