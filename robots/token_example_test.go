package robots_test

import (
	"fmt"

	"github.com/heedcrawl/heed/robots"
)

func ExampleProductToken() {
	fmt.Printf("%q\n", robots.ProductToken("FooBot/1.2 (+https://foo.example/bot)"))
	fmt.Printf("%q\n", robots.ProductToken("Googlebot-Image/1.0"))
	fmt.Printf("%q\n", robots.ProductToken("*"))
	// Output:
	// "FooBot"
	// "Googlebot-Image"
	// ""
}

func ExampleValidProductToken() {
	for _, s := range []string{"FooBot", "Foo_Bar-Baz", "FooBot/1.2", "FooBot2", "*", ""} {
		fmt.Println(s, robots.ValidProductToken(s))
	}
	// Output:
	// FooBot true
	// Foo_Bar-Baz true
	// FooBot/1.2 false
	// FooBot2 false
	// * false
	//  false
}
