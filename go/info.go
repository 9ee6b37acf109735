package spool

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// JobInfo is what spool-ls(1) and spool-show(1) say of a job with --json.
// Times are zero where the command says null.
type JobInfo struct {
	ID          string
	State       string    // new, leased, done or dead
	Disposition string    // parked, dropped, redriven; "": none
	Since       time.Time // when it entered its state
	Created     time.Time
	Deadline    time.Time
	Eligible    time.Time // when a claim may take it
	LeaseUntil  time.Time
	Owner       string
	Trace       string
	Key         string
	Token       uint64 // the highest token ever issued
	Attempts    int
	MaxAttempts int
	Cycles      int
	Reason      string // why it parked
	Class       string // how it last failed
	Detail      string
	SideEffect  bool // may have happened: reconcile before a redrive
	Redriven    bool
	Dropped     bool
	By, Note    string
	Damaged     bool
	History     []Delivery      // Show only: every delivery of every cycle
	JSON        json.RawMessage // the command's object, whole
}

// A Delivery is one lease of a job and how it ended (spool-show(1)).
type Delivery struct {
	Cycle, Attempt int
	Token          uint64
	Owner          string
	Claimed, Ended time.Time
	End            string // ok, retry, permanent, release, expired, parked, cancelled; "": under its lease
	Class, Detail  string
}

func msTime(ms *int64) time.Time {
	if ms == nil || *ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(*ms)
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func jobInfo(raw json.RawMessage) (*JobInfo, error) {
	var j struct {
		ID, State                              string
		Disposition, Owner, Trace, Key, Reason *string
		Class, Detail, By, Note                *string
		Since, Created, Deadline, Eligible     *int64
		LeaseUntil                             *int64 `json:"lease_until"`
		Token                                  uint64
		Attempts                               int
		MaxAttempts                            int `json:"max_attempts"`
		Cycles                                 int
		SideEffect                             bool `json:"side_effect"`
		Redriven, Dropped, Damaged             bool
		History                                []struct {
			Cycle, Attempt int
			Token          uint64
			Owner, End     *string
			Claimed, Ended *int64
			Class, Detail  *string
		}
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	info := &JobInfo{ID: j.ID, State: j.State,
		Disposition: str(j.Disposition), Since: msTime(j.Since),
		Created: msTime(j.Created), Deadline: msTime(j.Deadline),
		Eligible: msTime(j.Eligible), LeaseUntil: msTime(j.LeaseUntil),
		Owner: str(j.Owner), Trace: str(j.Trace), Key: str(j.Key),
		Token: j.Token, Attempts: j.Attempts,
		MaxAttempts: j.MaxAttempts, Cycles: j.Cycles,
		Reason: str(j.Reason), Class: str(j.Class),
		Detail: str(j.Detail), SideEffect: j.SideEffect,
		Redriven: j.Redriven, Dropped: j.Dropped, By: str(j.By),
		Note: str(j.Note), Damaged: j.Damaged, JSON: raw}
	for _, d := range j.History {
		info.History = append(info.History, Delivery{Cycle: d.Cycle,
			Attempt: d.Attempt, Token: d.Token, Owner: str(d.Owner),
			Claimed: msTime(d.Claimed), Ended: msTime(d.Ended),
			End: str(d.End), Class: str(d.Class),
			Detail: str(d.Detail)})
	}
	return info, nil
}

// List is spool-ls(1): the jobs in states (new, leased, done, dead,
// dropped; none: dead), and the options after them as it takes them,
// such as "--reason", "exhausted".
func (c *Client) List(ctx context.Context, states ...string) ([]*JobInfo,
	error) {
	a, err := c.do(ctx, nil, nil, append([]string{"ls"}, states...)...)
	if err != nil {
		return nil, err
	}
	jobs := make([]*JobInfo, 0, len(a.Out))
	for _, raw := range a.Out {
		j, err := jobInfo(raw)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// Show is spool-show(1): everything known about one job, its deliveries
// in History.  ErrNoJob if there is none.
func (c *Client) Show(ctx context.Context, id string) (*JobInfo, error) {
	a, err := c.do(ctx, nil, []string{id}, "show", id)
	if err != nil {
		return nil, err
	}
	if len(a.Out) != 1 {
		return nil, fmt.Errorf("spool: show %s: %d objects", id,
			len(a.Out))
	}
	return jobInfo(a.Out[0])
}

// Stat is spool-stat --json: the spool's counts and ages, key for key.
func (c *Client) Stat(ctx context.Context) (map[string]any, error) {
	a, err := c.do(ctx, nil, nil, "stat")
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if len(a.Out) != 1 || json.Unmarshal(a.Out[0], &m) != nil {
		return nil, fmt.Errorf("spool: stat: not one object")
	}
	return m, nil
}
