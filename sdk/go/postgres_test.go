package seshat_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// pgInstall is the command that installs a PostgreSQL server on these machines.
const pgInstall = "apt-get install -y postgresql (Debian's PostgreSQL server; .ci/setup does it)"

// pgBindir is the directory holding initdb and postgres: `pg_config --bindir`, else the newest
// /usr/lib/postgresql/*/bin (Debian keeps the server's binaries off PATH).
func pgBindir() (string, error) {
	hasServer := func(dir string) bool {
		_, a := os.Stat(filepath.Join(dir, "initdb"))
		_, b := os.Stat(filepath.Join(dir, "postgres"))
		return a == nil && b == nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); hasServer(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if hasServer(dirs[i]) {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL server binaries (pg_config --bindir, /usr/lib/postgresql/*/bin)")
}

// throwawayPostgres starts a PostgreSQL cluster of the test's own — initdb into a temporary
// directory, the server listening only on a Unix socket there, as the postgres user when the
// test runs as root (PostgreSQL refuses root) — and returns a store URL for a database in it.
// The server is the test process's child: stopped when the test ends, killed by the kernel if
// the test process dies first. Where no server can be started the test fails saying how to
// install one.
func throwawayPostgres(t testing.TB) string {
	fail := func(format string, args ...interface{}) {
		t.Helper()
		t.Fatalf("cannot start a PostgreSQL server for the test: %s\ninstall one with: %s", fmt.Sprintf(format, args...), pgInstall)
	}
	bindir, err := pgBindir()
	if err != nil {
		fail("%v", err)
	}
	dir, err := os.MkdirTemp("", "seshat-go-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var owner *syscall.SysProcAttr
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			fail("running as root, the cluster runs as the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		owner = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bindir, "initdb"), "-D", data, "-A", "trust", "-U", "seshat",
		"--no-sync", "-E", "UTF8", "--locale", "C")
	initdb.SysProcAttr = owner
	if out, err := initdb.CombinedOutput(); err != nil {
		fail("initdb: %v: %s", err, out)
	}
	server := exec.Command(filepath.Join(bindir, "postgres"), "-D", data, "-k", dir, "-p", "5432",
		"-c", "listen_addresses=", "-c", "fsync=off")
	attr := syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if owner != nil {
		attr.Credential = owner.Credential
	}
	server.SysProcAttr = &attr
	logs, err := server.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		fail("postgres: %v", err)
	}
	t.Cleanup(func() {
		// SIGQUIT: an immediate shutdown; the cluster is thrown away.
		_ = server.Process.Signal(syscall.SIGQUIT)
		_ = server.Wait()
	})
	lines := bufio.NewScanner(logs)
	var seen []string
	ready := false
	for !ready && lines.Scan() {
		seen = append(seen, lines.Text())
		ready = strings.Contains(lines.Text(), "database system is ready to accept connections")
	}
	if !ready {
		fail("the server ended before it was ready: %s", strings.Join(seen, "\n"))
	}
	go func() {
		for lines.Scan() {
			// What it logs goes on being read, so it never blocks on a full pipe.
		}
	}()
	psql := exec.Command(filepath.Join(bindir, "psql"), "-X", "-q", "-h", dir, "-p", "5432", "-U", "seshat",
		"-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", "CREATE DATABASE go_test")
	if out, err := psql.CombinedOutput(); err != nil {
		fail("psql: %v: %s", err, out)
	}
	return fmt.Sprintf("postgres://seshat@/go_test?host=%s&port=5432&sslmode=disable", dir)
}
