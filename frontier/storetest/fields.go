package storetest

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier/revisit"
)

var (
	timeType = reflect.TypeFor[time.Time]()
	pageType = reflect.TypeFor[revisit.Page]()
)

// Fill sets every field of the struct ptr points to to a value other than
// its zero value, one no Store needs to round: strings, integers (small
// and different from field to field; unsigned ones 1, a valid
// frontier.Kind), floats (0.5), bools, times (whole seconds, hours after
// at, in UTC), slices (two elements), maps (two pairs, one with a zero
// value), structs and pointers to structs (filled field by field, by the
// same rules) and a revisit.Page (a few observations), and fails tb for a
// field of any other kind: a field added to a
// type the suite checks is never silently skipped — teach Fill and Diff its
// kind. Tests set the fields whose values matter (an Item's URL and Key)
// afterwards.
func Fill(tb testing.TB, ptr any, at time.Time) {
	tb.Helper()
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		tb.Fatalf("storetest.Fill(%T): want a pointer to a struct", ptr)
	}
	fillStruct(tb, v.Elem(), at.Truncate(time.Second).UTC())
}

// fillStruct sets every field of the struct v.
func fillStruct(tb testing.TB, v reflect.Value, at time.Time) {
	tb.Helper()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name := v.Type().Name() + "." + f.Name
		if !f.IsExported() {
			tb.Fatalf("storetest.Fill: %s is unexported: Fill cannot set it", name)
		}
		fill(tb, v.Field(i), name, i, at)
		if v.Field(i).IsZero() {
			tb.Fatalf("storetest.Fill: %s is still zero", name)
		}
	}
}

// fill sets v, field number i of a struct, named name.
func fill(tb testing.TB, v reflect.Value, name string, i int, at time.Time) {
	tb.Helper()
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(at.Add(time.Duration(i+1) * time.Hour)))
		return
	case v.Type() == reflect.TypeFor[time.Duration]():
		v.SetInt(int64(i+1) * int64(time.Millisecond))
		return
	case v.Type() == pageType:
		v.Set(reflect.ValueOf(filledPage(tb, i)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("http://fill.test/%s", name))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(i + 2))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for j := range 2 {
			fill(tb, s.Index(j), fmt.Sprintf("%s[%d]", name, j), i+j, at)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMapWithSize(v.Type(), 2)
		for j := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			fill(tb, k, fmt.Sprintf("%s/key%d", name, j), i+j, at)
			e := reflect.New(v.Type().Elem()).Elem()
			if j == 0 {
				fill(tb, e, fmt.Sprintf("%s/value%d", name, j), i, at)
			}
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		fillStruct(tb, v, at)
	case reflect.Pointer:
		if v.Type().Elem().Kind() != reflect.Struct {
			tb.Fatalf("storetest.Fill: %s is a %s, which Fill does not know how to fill: teach Fill and Diff", name, v.Type())
		}
		p := reflect.New(v.Type().Elem())
		fillStruct(tb, p.Elem(), at)
		v.Set(p)
	default:
		tb.Fatalf("storetest.Fill: %s is a %s (%s), which Fill does not know how to fill: teach Fill and Diff", name, v.Type(), v.Kind())
	}
}

// filledPage returns a revisit.Page that has observed i+2 intervals, some
// of them changed.
func filledPage(tb testing.TB, i int) revisit.Page {
	var p revisit.Page
	for j := range i + 2 {
		if err := p.Observe(revisit.Obs{Interval: time.Duration(j+1) * time.Hour, Changed: j%2 == 0}); err != nil {
			tb.Fatalf("storetest.Fill: revisit.Page: %v", err)
		}
	}
	return p
}

// Diff returns the names of the fields of the structs want and got (of one
// type) that differ, except those in skip: times as instants
// (time.Time.Equal), floats bit for bit, the fields of structs and of
// pointers to structs one by one (named Type.Field, as skip names them),
// everything else with reflect.DeepEqual.
func Diff(want, got any, skip map[string]string) []string {
	return diffStruct(reflect.ValueOf(want), reflect.ValueOf(got), skip, nil)
}

func diffStruct(w, g reflect.Value, skip map[string]string, diff []string) []string {
	for i := range w.NumField() {
		name := w.Type().Name() + "." + w.Type().Field(i).Name
		if _, ok := skip[name]; ok {
			continue
		}
		wf, gf := w.Field(i), g.Field(i)
		switch {
		case wf.Kind() == reflect.Struct && wf.Type() != timeType && wf.Type() != pageType:
			diff = diffStruct(wf, gf, skip, diff)
			continue
		case wf.Kind() == reflect.Pointer && wf.Type().Elem().Kind() == reflect.Struct && !wf.IsNil() && !gf.IsNil():
			diff = diffStruct(wf.Elem(), gf.Elem(), skip, diff)
			continue
		}
		if !same(wf, gf) {
			diff = append(diff, fmt.Sprintf("%s: got %v, want %v", name, show(gf), show(wf)))
		}
	}
	return diff
}

// show formats v for a Diff, what a pointer points to rather than its
// address.
func show(v reflect.Value) any {
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		return v.Elem().Interface()
	}
	return v.Interface()
}

func same(a, b reflect.Value) bool {
	switch {
	case a.Type() == timeType:
		return a.Interface().(time.Time).Equal(b.Interface().(time.Time))
	case a.Kind() == reflect.Float32:
		return math.Float32bits(float32(a.Float())) == math.Float32bits(float32(b.Float()))
	case a.Kind() == reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
