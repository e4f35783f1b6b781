package broker

// ForceShareGroups serves the share-group APIs whatever share.version is
// finalized at, until the test ends.
func ForceShareGroups(t interface{ Cleanup(func()) }) {
	shareGroupsForced.Store(true)
	t.Cleanup(func() { shareGroupsForced.Store(false) })
}
