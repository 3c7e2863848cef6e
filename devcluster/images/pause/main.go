// Command pause is the pod sandbox process: it holds the pod's namespaces open, reaps the
// zombies of processes that share its PID namespace, and exits on SIGINT or SIGTERM. It does
// what Kubernetes' pause.c does, built from a few lines of Go so the devcluster needs no
// registry and no C toolchain.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const version = "3.10-tfjob"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause", version)
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "Shutting down, got signal %v\n", sig)
		os.Exit(0)
	}
}

// reap collects every exited child; one SIGCHLD may stand for several exits.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
