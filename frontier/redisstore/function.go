package redisstore

// The scripts requests run in a shard: by EVALSHA, or as functions loaded
// once into each server.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A script is a Lua script a request runs in a shard (call.go): the
// prelude and a part of its own.
type script interface {
	// run runs it on s's Redis with keys and args, loading it first
	// where the server lacks it.
	run(ctx context.Context, s *Store, keys []string, args []any) *redis.Cmd
	// queue adds a call of it to the pipeline p as it stands: a call that
	// fails there is sent again by run.
	queue(ctx context.Context, s *Store, p redis.Pipeliner, keys []string, args []any) *redis.Cmd
}

// evalScript is a script run by EVALSHA (by EVAL where the server lacks
// it): each call runs the whole of it, the prelude's definitions
// included.
type evalScript struct{ sc *redis.Script }

// newScript returns the script of src, a prelude (prelude) and its part.
func newScript(src string) evalScript {
	return evalScript{redis.NewScript(src)}
}

func (e evalScript) run(ctx context.Context, s *Store, keys []string, args []any) *redis.Cmd {
	return e.sc.Run(ctx, s.c, keys, args...)
}

func (e evalScript) queue(ctx context.Context, _ *Store, p redis.Pipeliner, keys []string, args []any) *redis.Cmd {
	return e.sc.EvalSha(ctx, p, keys, args...)
}

// function is a script loaded into each server once, as the function of
// a library of its own (FUNCTION LOAD, Redis 7): the library defines the
// prelude's functions once, and a call (FCALL) runs only the script's
// body. EVALSHA defines them all again at every call — the closures of a
// hundred functions, a sixth of a batch's time in Redis on a cluster,
// where a batch serves fewer pages than on one server. A server without
// functions (Redis 6) runs the same script by EVALSHA (eval).
type function struct {
	name string // FCALL's name of it: its library's, which names its source
	lib  string // the library's source
	eval evalScript
}

// newFunction returns the script whose definitions are defs (the prelude
// and more) and whose body, run by each call after begin (prelude.lua),
// is body. The function may read keys of several slots of its node, as a
// batch of a node does (batch.lua).
func newFunction(defs, body string) *function {
	sum := sha1.Sum([]byte(defs + body))
	name := "heed_" + hex.EncodeToString(sum[:10])
	lib := "#!lua name=" + name + "\nlocal KEYS, ARGV\n" + defs +
		"redis.register_function{function_name = '" + name + "', flags = {'allow-cross-slot-keys'}, callback = function(keys, args)\n" +
		"KEYS, ARGV = keys, args\nlocal memoed = begin()\nif memoed then return memoed end\n" + body + "\nend}\n"
	return &function{name: name, lib: lib, eval: newScript(defs + opening + body)}
}

func (f *function) run(ctx context.Context, s *Store, keys []string, args []any) *redis.Cmd {
	if s.noFunctions.Load() {
		return f.eval.run(ctx, s, keys, args)
	}
	cmd := s.c.FCall(ctx, f.name, keys, args...)
	switch err := cmd.Err(); {
	case err == nil:
		return cmd
	case unknownCommand(err):
		s.noFunctions.Store(true)
		return f.eval.run(ctx, s, keys, args)
	case strings.HasPrefix(err.Error(), "ERR Function not found"):
		if err := f.load(ctx, s.c); err != nil {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
		return s.c.FCall(ctx, f.name, keys, args...)
	}
	return cmd
}

func (f *function) queue(ctx context.Context, s *Store, p redis.Pipeliner, keys []string, args []any) *redis.Cmd {
	if s.noFunctions.Load() {
		return f.eval.queue(ctx, s, p, keys, args)
	}
	return p.FCall(ctx, f.name, keys, args...)
}

// load loads f's library into c's server, or every primary of c's
// cluster: a node that serves none of the job's slots yet may serve some
// after a resharding, and a replica has the functions of its primary.
func (f *function) load(ctx context.Context, c redis.UniversalClient) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.FunctionLoadReplace(ctx, f.lib).Err()
		})
	}
	return c.FunctionLoadReplace(ctx, f.lib).Err()
}

// unknownCommand reports whether err is a server's refusal of a command
// it does not know (FCALL, before Redis 7).
func unknownCommand(err error) bool {
	return strings.HasPrefix(strings.ToLower(err.Error()), "err unknown command")
}
