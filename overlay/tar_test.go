package overlay_test

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"
)

type v1Hash = v1.Hash

// entry is one archive entry of a test layer.
type entry struct {
	name   string
	typ    byte // tar.TypeReg when 0
	body   string
	link   string
	mode   int64
	uid    int
	gid    int
	xattrs map[string]string
	major  int64
	minor  int64
}

var testTime = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

func file(name, body string) entry { return entry{name: name, body: body, mode: 0o644} }
func dir(name string) entry        { return entry{name: name, typ: tar.TypeDir, mode: 0o755} }
func symlink(name, to string) entry {
	return entry{name: name, typ: tar.TypeSymlink, link: to, mode: 0o777}
}
func hardlink(name, to string) entry    { return entry{name: name, typ: tar.TypeLink, link: to} }
func whiteout(name string) entry        { return entry{name: name, body: ""} }
func withMode(e entry, m int64) entry   { e.mode = m; return e }
func withOwner(e entry, u, g int) entry { e.uid, e.gid = u, g; return e }

// layerTar builds an uncompressed layer.
func layerTar(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{
			Name: e.name, Typeflag: typ, Linkname: e.link, Mode: e.mode,
			Uid: e.uid, Gid: e.gid, ModTime: testTime, Format: tar.FormatPAX,
			Devmajor: e.major, Devminor: e.minor,
		}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if len(e.xattrs) > 0 {
			hdr.PAXRecords = map[string]string{}
			for k, v := range e.xattrs {
				hdr.PAXRecords["SCHILY.xattr."+k] = v
			}
		}
		require.NoError(t, tw.WriteHeader(hdr))
		if typ == tar.TypeReg {
			_, err := tw.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// v1Layer wraps a layer tar as a go-containerregistry layer.
func v1Layer(t testing.TB, b []byte) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	})
	require.NoError(t, err)
	return l
}
