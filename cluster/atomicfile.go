package cluster

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data durably: a temporary file next
// to it is written and synced, renamed over path, then the directory is
// synced, so a crash leaves the old content or the new, never a part.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return WriteFileAtomicFrom(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileAtomicFrom is WriteFileAtomic for content that write streams
// (through a buffer): a backup, an export. An error from write leaves
// path as it was.
func WriteFileAtomicFrom(path string, perm os.FileMode, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	err = errors.Join(err, tmp.Sync(), tmp.Chmod(perm), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name()) // the old file stays whole; the temporary one goes
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
