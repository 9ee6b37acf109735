// gocycle is qbench's Go client (bench/README.md, row 3): one Client, on
// one spool-batch, for the whole run, so that neither start is timed.
// For each number K read from stdin, K job cycles on the spool argv[1],
// through the spool-batch argv[2],
// each an enqueue of qbench's 100 bytes, a claim and an OK, as a Go
// program writes them; then one line, "K", on stdout.
package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"

	"spool"
)

func main() {
	c, err := spool.Open(os.Args[1], spool.Command(os.Args[2]))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	payload := append(bytes.Repeat([]byte("p"), 99), '\n')
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		k, err := strconv.Atoi(strings.TrimSpace(in.Text()))
		if err != nil {
			log.Fatal(err)
		}
		for i := 0; i < k; i++ {
			id, err := c.Enqueue(ctx, payload, spool.EnqueueOptions{})
			if err != nil {
				log.Fatal(err)
			}
			jobs, err := c.Claim(ctx, spool.ClaimOptions{Lease: 30e9})
			if err != nil || len(jobs) != 1 {
				info, _ := c.Show(ctx, id)
				log.Fatalf("claim after enqueue of %s: %v, %v; "+
					"the job: %s", id, jobs, err, info.JSON)
			}
			if err := jobs[0].OK(ctx); err != nil {
				log.Fatal(err)
			}
		}
		fmt.Println(k)
	}
	if err := c.Close(); err != nil {
		log.Fatal(err)
	}
}
