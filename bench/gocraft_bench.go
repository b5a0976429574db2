// gocraft_bench.go -- the gocraft/work (Go) row of `make bench`.
//
// Built by bench/run.sh in GOPATH mode (no network) against the gocraft/work
// sources named by HH_PEERS_DIR and Debian's redigo and robfig/cron. The same
// workloads as bench/bench.c, the same key=value output:
//
//	gocraft_bench enqueue -u URL -n N          N jobs {"i": i} of type "noop", one
//	                                           Enqueue each (gocraft/work has no bulk API)
//	gocraft_bench process -u URL -n N -c C     a worker pool (concurrency C) in a child
//	                                           process of its own; the jobs are moved
//	                                           aside (RENAME) while it boots
//	gocraft_bench latency -u URL -c C -j J --rate R --idle S
//	                                           three job types (critical, default, low,
//	                                           same priority), J jobs at R/s round robin,
//	                                           then S s of idle
//
// Every job does the benchmark's one counter increment and marks its index,
// so "each job ran exactly once" is checked job by job. gocraft/work's idle
// workers poll with a back-off of up to 5 s: the processing clock therefore
// runs from the first job picked up to the last job done (the others' from
// the release), said in the results.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocraft/work"
	"github.com/gomodule/redigo/redis"
)

const ns = "gwbench"

var (
	url     = flag.String("u", os.Getenv("REDIS_URL"), "redis URL")
	n       = flag.Int("n", 100000, "jobs")
	conc    = flag.Int("c", 10, "concurrency")
	jobs    = flag.Int("j", 1000, "latency jobs")
	rate    = flag.Float64("rate", 200, "latency pushes per second")
	idle    = flag.Float64("idle", 10, "idle window, seconds")
	timeout = flag.Float64("timeout", 120, "bound on the processing wait, seconds")
	settle  = flag.Float64("settle", 0.5, "seconds between the pool's start and the release")
	_       = flag.Int("b", 1000, "ignored: gocraft/work has no bulk enqueue")
)

func die(code int, f string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "gocraft_bench: "+f+"\n", a...)
	os.Exit(code)
}

func out(k string, f string, a ...interface{}) {
	fmt.Printf("%s="+f+"\n", append([]interface{}{k}, a...)...)
}

func newPool() *redis.Pool {
	return &redis.Pool{MaxActive: 200, MaxIdle: 200, Wait: true,
		Dial: func() (redis.Conn, error) { return redis.DialURL(*url) }}
}

// redis-server's own CPU, seconds (one INFO cpu)
func redisCPU(c redis.Conn) float64 {
	s, err := redis.String(c.Do("INFO", "cpu"))
	if err != nil {
		die(2, "INFO cpu: %v", err)
	}
	t := 0.0
	for _, l := range strings.Split(s, "\r\n") {
		if strings.HasPrefix(l, "used_cpu_sys:") || strings.HasPrefix(l, "used_cpu_user:") {
			v, _ := strconv.ParseFloat(l[strings.Index(l, ":")+1:], 64)
			t += v
		}
	}
	return t
}

// total calls over INFO commandstats
func cmdCalls(c redis.Conn) int64 {
	s, err := redis.String(c.Do("INFO", "commandstats"))
	if err != nil {
		die(2, "INFO commandstats: %v", err)
	}
	var t int64
	for _, l := range strings.Split(s, "\r\n") {
		if i := strings.Index(l, "calls="); i >= 0 {
			v, _ := strconv.ParseInt(strings.SplitN(l[i+6:], ",", 2)[0], 10, 64)
			t += v
		}
	}
	return t
}

func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

func procHWM(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			v, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return v
		}
	}
	return 0
}

func now() float64 { return float64(time.Now().UnixNano()) / 1e9 }

func main() {
	if len(os.Args) < 2 {
		die(2, "usage: gocraft_bench enqueue|process|latency [-u URL] [-n N] [-c C] [-j J] [--rate R] [--idle S]")
	}
	mode := os.Args[1]
	flag.CommandLine.Parse(os.Args[2:])
	if *url == "" {
		die(2, "no Redis URL: pass -u or set REDIS_URL")
	}
	switch mode {
	case "enqueue":
		enqueue()
	case "process":
		process()
	case "latency":
		latency()
	case "worker", "latworker":
		worker(mode == "latworker")
	default:
		die(2, "unknown mode %q", mode)
	}
}

func enqueue() {
	pool := newPool()
	c := pool.Get()
	defer c.Close()
	e := work.NewEnqueuer(ns, pool)
	key := ns + ":jobs:noop"
	len0, _ := redis.Int(c.Do("LLEN", key))
	a := cmdCalls(c)
	t0 := time.Now()
	for i := 0; i < *n; i++ {
		if _, err := e.Enqueue("noop", work.Q{"i": i}); err != nil {
			die(1, "Enqueue: %v", err)
		}
	}
	secs := time.Since(t0).Seconds()
	cmds := cmdCalls(c) - a - 1
	len1, _ := redis.Int(c.Do("LLEN", key))
	ok := len1-len0 == *n
	if !ok {
		fmt.Fprintf(os.Stderr, "gocraft_bench: CHECK FAILED: %s grew by %d, expected %d\n", key, len1-len0, *n)
	}
	out("enqueue_jobs", "%d", *n)
	out("enqueue_seconds", "%.4f", secs)
	out("enqueue_jobs_per_s", "%.0f", float64(*n)/secs)
	out("enqueue_cmds_per_job", "%.4f", float64(cmds)/float64(*n))
	out("enqueue_ok", "%d", b2i(ok))
	if !ok {
		os.Exit(1)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

type ctx struct{}

// worker is the child: a pool on "noop" (process) or on the three latency
// types; reports on stdout, stops when stdin says so or closes.
func worker(lat bool) {
	pool := newPool()
	wp := work.NewWorkerPool(ctx{}, uint(*conc), ns, pool)
	var ran, dups, first int64
	var firstAt, lastAt float64
	var mu sync.Mutex
	seen := make([]int32, *n)
	var lats []float64
	done := make(chan struct{})
	target := int64(*n)
	if lat {
		target = int64(*jobs)
	}
	finish := func() {
		lastAt = now()
		close(done)
	}
	if lat {
		h := func(c *ctx, j *work.Job) error {
			l := now() - j.ArgFloat64("t")
			mu.Lock()
			lats = append(lats, l)
			k := len(lats)
			mu.Unlock()
			if int64(k) == target {
				finish()
			}
			return nil
		}
		for _, q := range []string{"critical", "default", "low"} {
			wp.Job(q, h)
		}
	} else {
		wp.Job("noop", func(c *ctx, j *work.Job) error {
			if atomic.CompareAndSwapInt64(&first, 0, 1) {
				firstAt = now()
			}
			i := j.ArgInt64("i")
			if i < 0 || i >= int64(*n) || atomic.AddInt32(&seen[i], 1) != 1 {
				atomic.AddInt64(&dups, 1)
			}
			if atomic.AddInt64(&ran, 1) == target {
				finish()
			}
			return nil
		})
	}
	wp.Start()
	time.Sleep(time.Duration(*settle * float64(time.Second)))
	fmt.Println("ready")
	stop := make(chan struct{})
	go func() {
		bufio.NewReader(os.Stdin).ReadString('\n')
		close(stop)
	}()
	select {
	case <-done:
		if lat {
			sort.Float64s(lats)
			s := make([]string, len(lats))
			for i, v := range lats {
				s[i] = strconv.FormatFloat(v, 'f', 6, 64)
			}
			fmt.Println("lat " + strings.Join(s, " "))
		} else {
			missing := 0
			for i := range seen {
				if atomic.LoadInt32(&seen[i]) == 0 {
					missing++
				}
			}
			fmt.Printf("done %.6f %.6f %d %d\n", firstAt, lastAt, atomic.LoadInt64(&dups), missing)
		}
	case <-stop:
	}
	<-stop
	wp.Stop()
	fmt.Println("stopped")
}

type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func spawn(mode string, extra ...string) *child {
	self, _ := os.Executable()
	args := append([]string{mode, "-u", *url, "-n", strconv.Itoa(*n), "-c", strconv.Itoa(*conc),
		"-j", strconv.Itoa(*jobs), "-settle", fmt.Sprint(*settle)}, extra...)
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		die(2, "pipe: %v", err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		die(2, "pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		die(2, "start: %v", err)
	}
	ch := &child{cmd: cmd, out: bufio.NewReaderSize(r, 1<<20)}
	ch.in = w
	return ch
}

// line reads one line from the child, bounded by d.
func (ch *child) line(d time.Duration) (string, bool) {
	res := make(chan string, 1)
	go func() {
		s, _ := ch.out.ReadString('\n')
		res <- strings.TrimSpace(s)
	}()
	select {
	case s := <-res:
		return s, s != ""
	case <-time.After(d):
		return "", false
	}
}

func (ch *child) stop() bool {
	ch.in.Write([]byte("stop\n"))
	ch.in.Close()
	ch.line(60 * time.Second)
	return ch.cmd.Wait() == nil
}

func process() {
	pool := newPool()
	c := pool.Get()
	defer c.Close()
	key := ns + ":jobs:noop"
	if l, _ := redis.Int(c.Do("LLEN", key)); l != *n {
		die(2, "%s holds %d jobs, expected %d (run the enqueue mode first)", key, l, *n)
	}
	if _, err := c.Do("RENAME", key, ns+":staging"); err != nil {
		die(2, "RENAME: %v", err)
	}
	ch := spawn("worker")
	if s, ok := ch.line(60 * time.Second); !ok || s != "ready" {
		ch.cmd.Process.Kill()
		die(2, "the worker pool did not start")
	}
	pid := ch.cmd.Process.Pid
	a := cmdCalls(c)
	cpu0, rcpu0 := procCPU(pid), redisCPU(c)
	t0 := now()
	c.Do("RENAME", ns+":staging", key)
	s, ok := ch.line(time.Duration(*timeout * float64(time.Second)))
	rcpu1, cpu1, hwm := redisCPU(c), procCPU(pid), procHWM(pid)
	okAll := true
	stopped := ch.stop()
	if !ok || !strings.HasPrefix(s, "done ") {
		fmt.Fprintf(os.Stderr, "gocraft_bench: CHECK FAILED: not all %d jobs ran within %.0f s\n", *n, *timeout)
		os.Exit(1)
	}
	var first, last float64
	var dups, missing int
	fmt.Sscanf(s, "done %f %f %d %d", &first, &last, &dups, &missing)
	cmds := cmdCalls(c) - a - 4 // our INFOs and the RENAME
	left, _ := redis.Int(c.Do("LLEN", key))
	retry, _ := redis.Int(c.Do("ZCARD", ns+":retry"))
	dead, _ := redis.Int(c.Do("ZCARD", ns+":dead"))
	check := func(cond bool, f string, a ...interface{}) {
		if !cond {
			fmt.Fprintf(os.Stderr, "gocraft_bench: CHECK FAILED: "+f+"\n", a...)
			okAll = false
		}
	}
	check(dups == 0 && missing == 0, "%d job(s) ran more than once, %d never ran", dups, missing)
	check(left == 0, "%d jobs left in %s", left, key)
	check(retry+dead == 0, "%d jobs in retry/dead", retry+dead)
	check(stopped, "the worker pool did not stop cleanly")
	secs := last - first
	nn := float64(*n)
	k := fmt.Sprintf("proc_c%d", *conc)
	out(k+"_seconds", "%.4f", secs)
	out(k+"_wake_ms", "%.1f", (first-t0)*1e3)
	out(k+"_jobs_per_s", "%.0f", nn/secs)
	out(k+"_cpu_us_per_job", "%.2f", (cpu1-cpu0)*1e6/nn)
	out(k+"_cpu_pct", "%.1f", (cpu1-cpu0)/secs*100)
	out(k+"_redis_cpu_us_per_job", "%.2f", (rcpu1-rcpu0)*1e6/nn)
	out(k+"_redis_cpu_pct", "%.1f", (rcpu1-rcpu0)/secs*100)
	out(k+"_peak_rss_kib", "%d", hwm)
	out(k+"_cmds_per_job", "%.4f", float64(cmds)/nn)
	out(k+"_missing", "%d", missing)
	out(k+"_dups", "%d", dups)
	out(k+"_ok", "%d", b2i(okAll))
	if !okAll {
		os.Exit(1)
	}
}

func latency() {
	pool := newPool()
	c := pool.Get()
	defer c.Close()
	ch := spawn("latworker")
	if s, ok := ch.line(60 * time.Second); !ok || s != "ready" {
		ch.cmd.Process.Kill()
		die(2, "the worker pool did not start")
	}
	pid := ch.cmd.Process.Pid
	e := work.NewEnqueuer(ns, pool)
	qs := []string{"critical", "default", "low"}
	t0 := time.Now()
	for i := 0; i < *jobs; i++ {
		due := t0.Add(time.Duration(float64(i) / *rate * float64(time.Second)))
		time.Sleep(time.Until(due))
		if _, err := e.Enqueue(qs[i%3], work.Q{"i": i, "t": now()}); err != nil {
			die(1, "Enqueue: %v", err)
		}
	}
	s, ok := ch.line(60 * time.Second)
	if !ok || !strings.HasPrefix(s, "lat ") {
		ch.stop()
		die(1, "CHECK FAILED: not all %d latency jobs ran within 60 s of the last push", *jobs)
	}
	f := strings.Fields(s)[1:]
	lat := make([]float64, len(f))
	sum := 0.0
	for i, v := range f {
		lat[i], _ = strconv.ParseFloat(v, 64)
		sum += lat[i]
	}
	pct := func(q float64) float64 {
		r := int(q*float64(len(lat)) + 0.999999)
		if r < 1 {
			r = 1
		}
		return lat[r-1]
	}
	out("lat_jobs", "%d", len(lat))
	out("lat_p50_ms", "%.3f", pct(0.5)*1e3)
	out("lat_p99_ms", "%.3f", pct(0.99)*1e3)
	out("lat_max_ms", "%.3f", lat[len(lat)-1]*1e3)
	out("lat_mean_ms", "%.3f", sum/float64(len(lat))*1e3)
	out("lat_ok", "%d", b2i(len(lat) == *jobs))
	time.Sleep(time.Second)
	a := cmdCalls(c)
	cpu0, rcpu0 := procCPU(pid), redisCPU(c)
	i0 := time.Now()
	time.Sleep(time.Duration(*idle * float64(time.Second)))
	secs := time.Since(i0).Seconds()
	cpu1, rcpu1 := procCPU(pid), redisCPU(c)
	cmds := cmdCalls(c) - a - 3
	out("idle_seconds", "%.2f", secs)
	out("idle_cpu_pct", "%.3f", (cpu1-cpu0)/secs*100)
	out("idle_redis_cpu_pct", "%.3f", (rcpu1-rcpu0)/secs*100)
	out("idle_cmds_per_s", "%.2f", float64(cmds)/secs)
	out("idle_peak_rss_kib", "%d", procHWM(pid))
	ch.stop()
}
