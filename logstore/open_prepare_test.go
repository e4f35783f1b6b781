package logstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// syncLogFS records, in order, the renames and the fsyncs of files and
// directories made through it.
type syncLogFS struct {
	FS
	mu  sync.Mutex
	ops []string
}

type syncLogFile struct {
	File
	fs   *syncLogFS
	name string
}

func (f *syncLogFS) note(op string) {
	f.mu.Lock()
	f.ops = append(f.ops, op)
	f.mu.Unlock()
}

func (f *syncLogFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &syncLogFile{File: file, fs: f, name: name}, nil
}

func (f *syncLogFS) Rename(oldpath, newpath string) error {
	err := f.FS.Rename(oldpath, newpath)
	if err == nil {
		f.note("rename " + newpath)
	}
	return err
}

func (f *syncLogFS) MkdirAll(path string, perm fs.FileMode) error {
	_, statErr := os.Stat(path)
	err := f.FS.MkdirAll(path, perm)
	if err == nil && statErr != nil {
		f.note("mkdir " + path)
	}
	return err
}

func (f *syncLogFile) Sync() error {
	err := f.File.Sync()
	if err == nil {
		f.fs.note("sync " + f.name)
	}
	return err
}

// TestOpenNewPartitionsFlushInOrder: new partitions opened concurrently
// each get a durable partition.metadata (the file fsynced before it is
// renamed into place, the partition directory fsynced after the rename,
// the log directory fsynced after the partition directory was created),
// and the log directory's flushes are shared: never more than one per
// partition.
func TestOpenNewPartitionsFlushInOrder(t *testing.T) {
	root := t.TempDir()
	fsys := &syncLogFS{FS: OSFS{}}
	d, err := OpenDir(root, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(nil)
	id := [16]byte{9, 9}
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = d.Open(TopicPartition{Topic: "t", Partition: int32(i)}, id, DefaultConfig())
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	fsys.mu.Lock()
	ops := slices.Clone(fsys.ops)
	fsys.mu.Unlock()
	at := func(op string, from int) int {
		if i := slices.Index(ops[from:], op); i >= 0 {
			return from + i
		}
		return -1
	}
	logDirSyncs := 0
	for _, op := range ops {
		if op == "sync "+root {
			logDirSyncs++
		}
	}
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("t-%d", i))
		meta := filepath.Join(dir, partitionMetadataFile)
		mkdir := at("mkdir "+dir, 0)
		tmpSync := at("sync "+meta+".tmp", 0)
		rename := at("rename "+meta, 0)
		if mkdir < 0 || tmpSync < 0 || rename < tmpSync {
			t.Fatalf("%s: mkdir at %d, tmp fsync at %d, rename at %d: want the fsync before the rename", dir, mkdir, tmpSync, rename)
		}
		if at("sync "+dir, rename) < 0 {
			t.Fatalf("%s not fsynced after partition.metadata was renamed into it", dir)
		}
		if at("sync "+root, mkdir) < 0 {
			t.Fatalf("log dir not fsynced after %s was created", dir)
		}
		got, ok, err := readPartitionMetadata(OSFS{}, dir)
		if err != nil || !ok || got != id {
			t.Fatalf("%s: partition.metadata %v %v %v", dir, got, ok, err)
		}
	}
	if logDirSyncs == 0 || logDirSyncs > n {
		t.Fatalf("%d fsyncs of the log dir for %d new partitions", logDirSyncs, n)
	}
}

// TestOpenKeepsOtherTopicsMetadata: a partition directory that holds
// another topic's partition.metadata is not rewritten before the Dir's
// checks: Open still answers INCONSISTENT_TOPIC_ID and the file is kept.
func TestOpenKeepsOtherTopicsMetadata(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "t-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := partitionMetadata([16]byte{1})
	if err := os.WriteFile(filepath.Join(dir, partitionMetadataFile), old, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(nil)
	if _, err := d.Open(TopicPartition{Topic: "t", Partition: 0}, [16]byte{2}, DefaultConfig()); !errors.Is(err, ErrInconsistentTopicID) {
		t.Fatalf("open under another topic id: %v, want ErrInconsistentTopicID", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, partitionMetadataFile)); string(got) != string(old) {
		t.Fatalf("partition.metadata now %q, want %q", got, old)
	}
}
