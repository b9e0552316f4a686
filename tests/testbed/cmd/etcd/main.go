// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3.
//
// etcd's own main package lives in the root module go.etcd.io/etcd/v3, whose go.mod replaces its
// sibling modules with relative paths and so cannot be built as a dependency; this file is the
// whole of that main package.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
