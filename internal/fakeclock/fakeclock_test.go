package fakeclock_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/fakeclock"
)

func TestTimersFireInOrder(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := fakeclock.New(start)
	late := c.After(2 * time.Second)
	early := c.After(time.Second)
	stopped := c.NewTimer(time.Second)
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	c.Advance(1500 * time.Millisecond)
	select {
	case got := <-early:
		if want := start.Add(1500 * time.Millisecond); !got.Equal(want) {
			t.Fatalf("early fired at %v, want %v", got, want)
		}
	default:
		t.Fatal("timer due at 1s did not fire after 1.5s")
	}
	select {
	case <-late:
		t.Fatal("timer due at 2s fired after 1.5s")
	case <-stopped.C:
		t.Fatal("stopped timer fired")
	default:
	}
	if n := c.Waiters(); n != 1 {
		t.Fatalf("Waiters = %d, want 1", n)
	}
	c.Advance(time.Second)
	<-late
}

func TestBlockUntil(t *testing.T) {
	c := fakeclock.New(time.Unix(0, 0))
	done := make(chan struct{})
	go func() {
		<-c.After(time.Minute)
		close(done)
	}()
	c.BlockUntil(1)
	c.Advance(time.Minute)
	<-done
}

func Example() {
	c := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fired := c.After(10 * time.Second)
	c.Advance(10 * time.Second)
	fmt.Println((<-fired).Format(time.TimeOnly))
	// Output: 00:00:10
}
