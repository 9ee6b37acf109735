package spool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// newSpool makes a spool with spool-init, on PATH as spool-batch is.
func newSpool(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "spool")
	if out, err := exec.Command("spool-init", "-d", dir).CombinedOutput(); err != nil {
		t.Fatalf("spool-init: %v: %s", err, out)
	}
	return dir
}

func open(t *testing.T, dir string) *Client {
	t.Helper()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// cmd runs a command on the spool and gives its stdout.
func cmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], append([]string{"-d", dir},
		args[1:]...)...).Output()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(out)
}

// wantErr checks that err is kind, with exactly the message text.
func wantErr(t *testing.T, err, kind error, text string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("got %v, want %v", err, kind)
	}
	if err.Error() != text {
		t.Fatalf("got %q, want %q", err.Error(), text)
	}
}

func enqueue(t *testing.T, c *Client, id, body string) {
	t.Helper()
	got, err := c.Enqueue(context.Background(), []byte(body),
		EnqueueOptions{ID: id})
	if err != nil || got != id {
		t.Fatalf("enqueue %s: %q, %v", id, got, err)
	}
}

func claim1(t *testing.T, c *Client, o ClaimOptions) *Job {
	t.Helper()
	jobs, err := c.Claim(context.Background(), o)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v, %v", jobs, err)
	}
	return jobs[0]
}

func TestCycle(t *testing.T) {
	ctx := context.Background()
	dir := newSpool(t)
	c := open(t, dir)
	id, err := c.Enqueue(ctx, []byte("order=1842\n"), EnqueueOptions{})
	if err != nil || len(id) != 36 {
		t.Fatalf("enqueue: %q, %v", id, err)
	}
	enqueue(t, c, "b", "")
	jobs, err := c.Claim(ctx, ClaimOptions{N: 5, Owner: "w1",
		Lease: time.Minute})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %v, %v", jobs, err)
	}
	// One bucket of new/: claimed in no set order.
	if jobs[0].ID != id {
		jobs[0], jobs[1] = jobs[1], jobs[0]
	}
	j := jobs[0]
	if j.ID != id || j.Token > 2 || j.Attempt != 1 || j.Cycle != 1 ||
		time.Until(j.LeaseUntil) < 50*time.Second {
		t.Fatalf("job %+v", j)
	}
	if body, err := j.Payload(); err != nil || string(body) != "order=1842\n" {
		t.Fatalf("payload %q, %v", body, err)
	}
	if err := j.Renew(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := j.OK(ctx); err != nil {
		t.Fatal(err)
	}
	if err := jobs[1].Retry(ctx, RetryOptions{Class: "rate-limited",
		Detail: "HTTP 429", Delay: AtOnce}); err != nil {
		t.Fatal(err)
	}
	info, err := c.Show(ctx, "b")
	if err != nil || info.State != "new" || info.Attempts != 1 ||
		info.Class != "rate-limited" || info.Detail != "HTTP 429" ||
		len(info.History) != 1 || info.History[0].End != "retry" ||
		info.History[0].Owner != "w1" {
		t.Fatalf("show b: %+v, %v", info, err)
	}
	if jobs, err = c.Claim(ctx, ClaimOptions{}); err != nil ||
		len(jobs) != 1 || jobs[0].Attempt != 2 {
		t.Fatalf("claim again: %v, %v", jobs, err)
	}
	if err := jobs[0].Fail(ctx, "invalid-input", "no amount"); err != nil {
		t.Fatal(err)
	}
	if jobs, err = c.Claim(ctx, ClaimOptions{}); err != nil || jobs != nil {
		t.Fatalf("claim of nothing: %v, %v", jobs, err)
	}
	dead, err := c.List(ctx, "dead")
	if err != nil || len(dead) != 1 || dead[0].ID != "b" ||
		dead[0].Reason != "permanent" || dead[0].Class != "invalid-input" {
		t.Fatalf("ls dead: %+v, %v", dead, err)
	}
	st, err := c.Stat(ctx)
	if err != nil || st["done"] != 1.0 || st["dead"] != 1.0 {
		t.Fatalf("stat: %v, %v", st, err)
	}
	if out := cmd(t, dir, "spool-fsck"); out != "" {
		t.Fatal(out)
	}
}

// Every refusal and failure, with the command's words.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	dir := newSpool(t)
	c := open(t, dir)
	enqueue(t, c, "a", "x")
	_, err := c.Enqueue(ctx, []byte("y"), EnqueueOptions{ID: "a"})
	wantErr(t, err, ErrDuplicate,
		"spool-enqueue: a: duplicate ID: the job is in new/")
	_, err = c.Enqueue(ctx, nil, EnqueueOptions{ID: "-bad"})
	wantErr(t, err, ErrPermanent, "spool-enqueue: --id: bad value "+
		"(letters, digits, '.', '_', '-', starting with a letter or "+
		"digit, at most 128 bytes)")
	j := &Job{ID: "a", Token: 1, c: c}
	wantErr(t, j.Renew(ctx, 0), ErrNotLeased,
		"spool-renew: a: not leased: never claimed, the job is in new/")
	wantErr(t, c.Redrive(ctx, OperatorOptions{By: "op", Note: "n"}, "a"),
		ErrNotParked, "spool-redrive: a: not parked: the job is in new/")
	_, err = c.Show(ctx, "nosuch")
	wantErr(t, err, ErrNoJob, "spool-show: nosuch: no such job")
	_, err = c.Claim(ctx, ClaimOptions{N: 300})
	wantErr(t, err, ErrPermanent,
		"spool-claim: -n: bad number '300' (1 to 256)")
	j = claim1(t, c, ClaimOptions{Lease: time.Minute})
	wantErr(t, j.Retry(ctx, RetryOptions{Class: "no-such-class"}),
		ErrPermanent, "spool-finish: --class: unknown class "+
			"'no-such-class' (transient, rate-limited, "+
			"dependency-down, invalid-input, permission, cancelled, "+
			"unknown-side-effect, crashed, timeout or lease-expired)")
	if err := j.Retry(ctx, RetryOptions{Class: "unknown-side-effect"}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, c.Redrive(ctx, OperatorOptions{By: "op", Note: "n"}, "a"),
		ErrUnreconciled, "spool-redrive: a: its side effect may have "+
			"happened: reconcile it, then redrive with --reconciled")
	wantErr(t, j.OK(ctx), ErrNotLeased,
		"spool-finish: a: not leased: the job is in dead/")
	// Below the reserve: a retry may mend it.
	f, err := os.OpenFile(filepath.Join(dir, "config"),
		os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "reserve=1000T")
	f.Close()
	c2 := open(t, dir)
	_, err = c2.Enqueue(ctx, []byte("z"), EnqueueOptions{ID: "z"})
	if !errors.Is(err, ErrTemporary) || !strings.HasPrefix(err.Error(),
		"spool-enqueue: free space is below the spool's reserve: ") {
		t.Fatalf("below the reserve: %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Status != 111 {
		t.Fatalf("status: %v", err)
	}
	c2.Close()
	_, err = c2.Enqueue(ctx, []byte("z"), EnqueueOptions{})
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// A relayer's story: three webhooks park for three reasons; each is
// redriven by hand; only the re-signed one is sent; a second redrive of
// it is refused.
func TestRelayer(t *testing.T) {
	ctx := context.Background()
	dir := newSpool(t)
	c := open(t, dir)
	op := OperatorOptions{By: "ops", Note: "INC-7"}
	enqueue(t, c, "hook-sig", "sig=bad")
	if _, err := c.Enqueue(ctx, []byte("sig=ok to=down"),
		EnqueueOptions{ID: "hook-down", MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, c, "hook-timeout", "sig=ok to=slow")
	var sent []string
	down, slow := true, true
	relay := func(ctx context.Context, j *Job) error {
		body, err := j.Payload()
		switch {
		case err != nil:
			return err
		case strings.Contains(string(body), "sig=bad"):
			return Permanent("invalid-input", errors.New("bad signature"))
		case strings.Contains(string(body), "to=down") && down:
			return errors.New("HTTP 503")
		case strings.Contains(string(body), "to=slow") && slow:
			return Permanent("unknown-side-effect",
				errors.New("timeout after send"))
		}
		sent = append(sent, j.ID)
		return nil
	}
	if err := c.Work(ctx, relay, WorkOptions{IdleExit: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	dead, err := c.List(ctx, "dead")
	if err != nil || len(dead) != 3 {
		t.Fatalf("dead: %v, %v", dead, err)
	}
	why := map[string]string{}
	for _, d := range dead {
		why[d.ID] = d.Reason + "/" + d.Class
	}
	if fmt.Sprint(why) != "map[hook-down:exhausted/transient "+
		"hook-sig:permanent/invalid-input "+
		"hook-timeout:side-effect/unknown-side-effect]" {
		t.Fatal(why)
	}
	// Each redriven by hand: the re-signed one, edited; the one that
	// may have been sent, refused until reconciled; the endpoint still
	// down.
	sig := filepath.Join(dir, "dead", "hook-sig")
	if err := os.WriteFile(sig, []byte("sig=good"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = c.Redrive(ctx, op, "hook-sig")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(),
		"its payload is not the one enqueued") {
		t.Fatalf("redrive of an edited payload: %v", err)
	}
	edited := op
	edited.Edited = true
	if err := c.Redrive(ctx, edited, "hook-sig"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, c.Redrive(ctx, op, "hook-timeout"), ErrUnreconciled,
		"spool-redrive: hook-timeout: its side effect may have happened: "+
			"reconcile it, then redrive with --reconciled")
	if err := c.Redrive(ctx, op, "hook-down"); err != nil {
		t.Fatal(err)
	}
	if err := c.Work(ctx, relay, WorkOptions{IdleExit: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sent) != "[hook-sig]" {
		t.Fatalf("sent %v", sent)
	}
	wantErr(t, c.Redrive(ctx, op, "hook-sig"), ErrNotParked,
		"spool-redrive: hook-sig: not parked: the job is in done/")
	info, err := c.Show(ctx, "hook-down")
	if err != nil || info.State != "dead" || info.Cycles != 2 ||
		!info.Redriven {
		t.Fatalf("hook-down: %+v, %v", info, err)
	}
	if out := cmd(t, dir, "spool-fsck"); out != "" {
		t.Fatal(out)
	}
}

// A lease lost to a takeover: the first holder's finish is refused by its
// token, and the job is done once.
func TestStaleAfterTakeover(t *testing.T) {
	ctx := context.Background()
	dir := newSpool(t)
	c1, c2 := open(t, dir), open(t, dir)
	enqueue(t, c1, "a", "x")
	j1 := claim1(t, c1, ClaimOptions{Owner: "w1", Lease: 50 * time.Millisecond})
	// Past its lease (and the spool's skew of 0 on one host).
	for time.Until(j1.LeaseUntil) > -10*time.Millisecond {
		time.Sleep(10 * time.Millisecond)
	}
	j2 := claim1(t, c2, ClaimOptions{Owner: "w2", Lease: time.Minute})
	if j2.ID != "a" || j2.Token <= j1.Token || j2.Attempt != 2 {
		t.Fatalf("takeover: %+v", j2)
	}
	wantErr(t, j1.OK(ctx), ErrStaleToken, fmt.Sprintf("spool-finish: a: "+
		"stale token: the current token is %d and the job is in leased/",
		j2.Token))
	wantErr(t, j1.Renew(ctx, time.Minute), ErrStaleToken,
		fmt.Sprintf("spool-renew: a: stale token: the current token is "+
			"%d and the job is in leased/", j2.Token))
	if err := j2.OK(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := c1.Show(ctx, "a")
	if err != nil || info.State != "done" || len(info.History) != 2 ||
		info.History[0].End != "expired" || info.History[1].End != "ok" {
		t.Fatalf("show a: %+v, %v", info, err)
	}
}

// 16 goroutines on one spool: every job done once.
func TestWork16(t *testing.T) {
	ctx := context.Background()
	dir := newSpool(t)
	c := open(t, dir)
	const n = 200
	for i := 0; i < n; i++ {
		enqueue(t, c, fmt.Sprintf("j%03d", i), "x")
	}
	var mu sync.Mutex
	seen := map[string]int{}
	err := c.Work(ctx, func(ctx context.Context, j *Job) error {
		mu.Lock()
		seen[j.ID]++
		mu.Unlock()
		return nil
	}, WorkOptions{Concurrency: 16, IdleExit: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("%d jobs seen", len(seen))
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("%s delivered %d times", id, k)
		}
	}
	done := strings.Fields(cmd(t, dir, "spool-ls", "done"))
	if len(done) != n {
		t.Fatalf("%d done", len(done))
	}
	if out := cmd(t, dir, "spool-fsck"); out != "" {
		t.Fatal(out)
	}
}

// A handler's error retries, its panic finishes as crashed, and the
// worker goes on; MaxJobs ends it.
func TestWorkResults(t *testing.T) {
	ctx := context.Background()
	dir := newSpool(t)
	c := open(t, dir)
	for _, id := range []string{"boom", "fail", "good"} {
		enqueue(t, c, id, id)
	}
	err := c.Work(ctx, func(ctx context.Context, j *Job) error {
		switch j.ID {
		case "boom":
			panic("nil map")
		case "fail":
			return errors.New("HTTP 503")
		}
		return nil
	}, WorkOptions{MaxJobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, id := range []string{"boom", "fail", "good"} {
		info, err := c.Show(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %d %s %q", id, info.State,
			info.Attempts, info.Class, info.Detail))
	}
	sort.Strings(got)
	want := []string{`boom new 1 crashed "panic: nil map"`,
		`fail new 1 transient "HTTP 503"`, `good done 1  ""`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q", got)
	}
}

// Work's context done: nothing more claimed; a handler that then fails
// has its job released, its attempt not spent.
func TestWorkStop(t *testing.T) {
	dir := newSpool(t)
	c := open(t, dir)
	enqueue(t, c, "a", "x")
	enqueue(t, c, "b", "x")
	ctx, cancel := context.WithCancel(context.Background())
	err := c.Work(ctx, func(hctx context.Context, j *Job) error {
		cancel()
		<-hctx.Done()
		return hctx.Err()
	}, WorkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	new, err := c.List(bg, "new")
	if err != nil || len(new) != 2 || new[0].Attempts+new[1].Attempts != 0 {
		t.Fatalf("new: %+v, %v", new, err)
	}
}

// A claim's wait ends when a job comes, or when its context is done.
func TestClaimWait(t *testing.T) {
	dir := newSpool(t)
	c, p := open(t, dir), open(t, dir)
	late := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_, err := p.Enqueue(context.Background(), []byte("x"),
			EnqueueOptions{ID: "late"})
		late <- err
	}()
	j := claim1(t, c, ClaimOptions{Wait: time.Minute})
	if err := <-late; err != nil {
		t.Fatal(err)
	}
	if j.ID != "late" {
		t.Fatal(j.ID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	jobs, err := c.Claim(ctx, ClaimOptions{Wait: time.Hour})
	if jobs != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v, %v", jobs, err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	jobs, err = c.Claim(ctx, ClaimOptions{Wait: time.Hour})
	if jobs != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait past the deadline: %v, %v", jobs, err)
	}
}

// The child killed mid-session: every call fails, none hangs, and the
// client opens again.
func TestChildKilled(t *testing.T) {
	ctx := context.Background()
	dir := newSpool(t)
	c := open(t, dir)
	enqueue(t, c, "a", "x")
	// A claim waiting in the child when it is killed.
	done := make(chan error, 8)
	go func() {
		_, err := c.Claim(ctx, ClaimOptions{Wait: time.Hour})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		go func() {
			_, err := c.Enqueue(ctx, []byte("y"), EnqueueOptions{})
			done <- err
		}()
	}
	for i := 0; i < 5; i++ {
		if err := <-done; i > 0 && !errors.Is(err, ErrClosed) {
			t.Fatalf("after the kill: %v", err)
		}
	}
	_, err := c.Claim(ctx, ClaimOptions{})
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(),
		"spool-batch on "+dir+" ended") {
		t.Fatalf("%v", err)
	}
	c = open(t, dir)
	if info, err := c.Show(ctx, "a"); err != nil || info.State == "" {
		t.Fatalf("reopened: %+v, %v", info, err)
	}
}

// The operator's calls and the other finishes, each refusal with the
// command's words.
func TestOperatorCalls(t *testing.T) {
	ctx := context.Background()
	dir := newSpool(t)
	c := open(t, dir)
	op := OperatorOptions{By: "ops", Note: "CHG-9"}
	if id, err := c.EnqueueFrom(ctx, strings.NewReader("from a reader"),
		EnqueueOptions{ID: "r", Trace: "t-1", Key: "k"}); err != nil || id != "r" {
		t.Fatalf("enqueue from: %q, %v", id, err)
	}
	wantErr(t, c.Drop(ctx, op, "r"), ErrNotParked,
		"spool-drop: r: not parked: the job is in new/")
	if err := c.Pause(ctx, op); err != nil {
		t.Fatal(err)
	}
	if jobs, err := c.Claim(ctx, ClaimOptions{}); err != nil || jobs != nil {
		t.Fatalf("claim while paused: %v, %v", jobs, err)
	}
	if err := c.Resume(ctx, op); err != nil {
		t.Fatal(err)
	}
	j := claim1(t, c, ClaimOptions{})
	if body, err := j.Payload(); err != nil || string(body) != "from a reader" ||
		j.Trace != "t-1" {
		t.Fatalf("payload %q, %v, trace %q", body, err, j.Trace)
	}
	if err := j.Release(ctx, 0); err != nil {
		t.Fatal(err)
	}
	j = claim1(t, c, ClaimOptions{})
	if j.Attempt != 1 {
		t.Fatalf("a release spent an attempt: %+v", j)
	}
	wantErr(t, c.Cancel(ctx, OperatorOptions{By: "ops"}, "r"), ErrPermanent,
		"spool-cancel: --by WHO and --note TICKET are needed; missing: --note")
	if err := c.Cancel(ctx, op, "r"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, j.OK(ctx), ErrNotLeased,
		"spool-finish: r: not leased: the job is in dead/")
	wantErr(t, c.Cancel(ctx, op, "r"), ErrRefused,
		"spool-cancel: r: not queued: the job is in dead/")
	if err := c.Drop(ctx, op, "r"); err != nil {
		t.Fatal(err)
	}
	info, err := c.Show(ctx, "r")
	if err != nil || info.State != "done" || !info.Dropped ||
		info.By != "ops" || info.Note != "CHG-9" || info.Key != "k" {
		t.Fatalf("show r: %+v, %v", info, err)
	}
	if out := cmd(t, dir, "spool-fsck"); out != "" {
		t.Fatal(out)
	}
}

// What spool-batch could not frame is not sent, and the session stays in
// step; a value that reads like an option is that value.
func TestOddValues(t *testing.T) {
	ctx := context.Background()
	dir := newSpool(t)
	c := open(t, dir)
	_, err := c.Enqueue(ctx, []byte(`["enqueue","--id","injected"]`+"\n"),
		EnqueueOptions{Trace: "a\x00b"})
	wantErr(t, err, ErrPermanent, `spool: enqueue: a NUL in "a\x00b"`)
	_, err = c.Enqueue(ctx, []byte("x"),
		EnqueueOptions{Key: strings.Repeat("k", lineMax)})
	wantErr(t, err, ErrPermanent, "spool: enqueue: a request over 65536 bytes")
	enqueue(t, c, "a", "x")
	j := claim1(t, c, ClaimOptions{})
	if err := j.Fail(ctx, "invalid-input", "--bytes=5"); err != nil {
		t.Fatal(err)
	}
	info, err := c.Show(ctx, "a")
	if err != nil || info.Detail != "--bytes=5" || info.State != "dead" {
		t.Fatalf("show a: %+v, %v", info, err)
	}
	if _, err := c.Show(ctx, "injected"); !errors.Is(err, ErrNoJob) {
		t.Fatalf("injected: %v", err)
	}
	// A panic with nil is a crash; Permanent with no error parks with
	// its class for the detail.
	enqueue(t, c, "p", "x")
	enqueue(t, c, "q", "x")
	err = c.Work(ctx, func(ctx context.Context, j *Job) error {
		if j.ID == "p" {
			panic(nil)
		}
		return Permanent("permission", nil)
	}, WorkOptions{MaxJobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"p": "new crashed panic: <nil>",
		"q": "dead permission permission"} {
		info, err := c.Show(ctx, id)
		if got := fmt.Sprint(info.State, " ", info.Class, " ",
			info.Detail); err != nil || got != want {
			t.Fatalf("%s: %q, %v", id, got, err)
		}
	}
}
