package robots

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// The standard library has no IDNA, and robots imports nothing else, so
// the gate folds internationalised host names itself: lower-case, then
// each non-ASCII label to "xn--" + its punycode (RFC 3492). That covers
// names that are already in their IDNA-mapped form, which is what a URL
// canonicaliser upstream (x/net/idna) hands over.

// gateIDNADots are the dots IDNA treats as label separators (UTS #46).
var gateIDNADots = strings.NewReplacer("\u3002", ".", "\uff0e", ".", "\uff61", ".")

var errPunycode = errors.New("punycode: label out of range")

// gateASCIIHost lower-cases host and encodes its non-ASCII labels.
func gateASCIIHost(host string) (string, error) {
	ascii := true
	for i := 0; i < len(host); i++ {
		if host[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(host), nil
	}
	if !utf8.ValidString(host) {
		return "", errors.New("host is not valid UTF-8")
	}
	labels := strings.Split(gateIDNADots.Replace(strings.ToLower(host)), ".")
	for i, label := range labels {
		if !gateASCIILabel(label) {
			enc, err := punycodeEncode(label)
			if err != nil {
				return "", err
			}
			labels[i] = "xn--" + enc
		}
	}
	return strings.Join(labels, "."), nil
}

func gateASCIILabel(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Punycode parameters (RFC 3492 §5).
const (
	punyBase        = 36
	punyTMin        = 1
	punyTMax        = 26
	punySkew        = 38
	punyDamp        = 700
	punyInitialBias = 72
	punyInitialN    = 128
	punyMaxInt      = 1<<31 - 1 // the RFC's overflow bound, for 32-bit decoders
)

// punycodeEncode encodes a label (RFC 3492 §6.3), without the "xn--".
func punycodeEncode(label string) (string, error) {
	runes := []rune(label)
	out := make([]byte, 0, len(label)+8)
	for _, r := range runes {
		if r < utf8.RuneSelf {
			out = append(out, byte(r))
		}
	}
	basic := len(out)
	handled := basic
	if basic > 0 {
		out = append(out, '-')
	}
	n, delta, bias := punyInitialN, 0, punyInitialBias
	for handled < len(runes) {
		m := punyMaxInt
		for _, r := range runes {
			if int(r) >= n && int(r) < m {
				m = int(r)
			}
		}
		if (m - n) > (punyMaxInt-delta)/(handled+1) {
			return "", errPunycode
		}
		delta += (m - n) * (handled + 1)
		n = m
		for _, r := range runes {
			if int(r) < n {
				if delta++; delta > punyMaxInt {
					return "", errPunycode
				}
			}
			if int(r) != n {
				continue
			}
			q := delta
			for k := punyBase; ; k += punyBase {
				t := min(max(k-bias, punyTMin), punyTMax)
				if q < t {
					break
				}
				out = append(out, punyDigit(t+(q-t)%(punyBase-t)))
				q = (q - t) / (punyBase - t)
			}
			out = append(out, punyDigit(q))
			bias = punyAdapt(delta, handled+1, handled == basic)
			delta = 0
			handled++
		}
		delta++
		n++
	}
	return string(out), nil
}

func punyDigit(d int) byte {
	if d < 26 {
		return byte('a' + d)
	}
	return byte('0' + d - 26)
}

// punyAdapt is the bias adaptation function (RFC 3492 §6.1).
func punyAdapt(delta, numPoints int, first bool) int {
	if first {
		delta /= punyDamp
	} else {
		delta /= 2
	}
	delta += delta / numPoints
	k := 0
	for delta > ((punyBase-punyTMin)*punyTMax)/2 {
		delta /= punyBase - punyTMin
		k += punyBase
	}
	return k + (punyBase-punyTMin+1)*delta/(delta+punySkew)
}
