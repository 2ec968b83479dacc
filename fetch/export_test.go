package fetch

import (
	"context"
	"net"
)

// DialFunc is the shape of the functions the default transport connects
// with.
type DialFunc = func(ctx context.Context, network, address string) (net.Conn, error)

// SetDialWrapper makes f's default transport connect through w(dial), so a
// test can watch every address that reaches a real connect.
func SetDialWrapper(f *Fetcher, w func(DialFunc) DialFunc) {
	f.wrapDial = func(d dialFunc) dialFunc { return w(d) }
}

// GuardedDial returns the function f's default transport connects to
// checked addresses with (its net.Dialer and Control), without the name
// resolution and checks before it.
func GuardedDial(f *Fetcher) DialFunc {
	return newGuardedDialer(f, DefaultConnectTimeout).dial
}
