package frontier

// SetWaitHook makes f call hook each time a Next call is about to block, so
// tests can act once a worker is waiting instead of sleeping.
func SetWaitHook(f *Frontier, hook func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waitHook = hook
}
