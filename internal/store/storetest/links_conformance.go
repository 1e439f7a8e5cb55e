package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

var linkTests = []contractTest{
	{name: "a link upsert applies unless the stored link is later", fn: testLinkUpsertOrder},
	{name: "a removed link stays a tombstone until a newer create", fn: testLinkTombstone},
	{name: "links are listed by contribution and by issue", fn: testLinksToAndFrom},
	{name: "a link ID is a connection's: another connection's row is never touched", fn: testLinksKeyedByConnection},
	{name: "a link without a connection is taken over by its issue's connection", fn: testLinkWithoutConnectionTakenOver},
	{name: "a task is found by a former source reference", fn: testFindTaskByFormerRef},
	{name: "a contribution's projection rows are found and deleted", fn: testProjectionsOfContribution},
}

// newLink is link id of issue ext in workspace ws, recorded by connection
// ln-a, naming pull request acme/api#42 on github.com, updated minutes
// after epoch.
func newLink(ws, id, ext string, minutes int) store.ContributionLink {
	return store.ContributionLink{WorkspaceID: ws, ConnectionID: "ln-a", LinkID: id, ExternalID: ext, Provider: "github", Host: "github.com",
		Repository: "acme/api", Number: 42, URL: "https://github.com/acme/api/pull/42",
		UpdatedAt: epoch.Add(time.Duration(minutes) * time.Minute)}
}

// linkIDs is the link IDs of ls, in order.
func linkIDs(ls []store.ContributionLink) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.LinkID)
	}
	return out
}

// sameLinks reports whether a and b hold the same rows in the same order,
// times compared as instants.
func sameLinks(a, b []store.ContributionLink) bool {
	return slices.EqualFunc(a, b, func(x, y store.ContributionLink) bool {
		same := x.UpdatedAt.Equal(y.UpdatedAt)
		x.UpdatedAt, y.UpdatedAt = time.Time{}, time.Time{}
		return same && x == y
	})
}

// testLinkUpsertOrder: a link is inserted; a newer or equally recent write
// replaces every column; an older one is not applied and changes nothing.
func testLinkUpsertOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	moved := newLink("ws", "a1", "ext-2", 10)
	moved.Provider, moved.Host, moved.Repository, moved.Number = "gitlab", "gitlab.example.com", "group/project", 7
	moved.URL = "https://gitlab.example.com/group/project/-/merge_requests/7"
	older := newLink("ws", "a1", "ext-1", 5)
	older.URL = "https://github.com/acme/api/pull/42?older"
	equal := moved
	equal.URL = "https://gitlab.example.com/group/project/-/merge_requests/7?equal"
	steps := []struct {
		name        string
		write       store.ContributionLink
		wantApplied bool
		want        store.ContributionLink // the stored row after the write
	}{
		{"an insert", newLink("ws", "a1", "ext-1", 5), true, newLink("ws", "a1", "ext-1", 5)},
		{"a newer write replaces every column", moved, true, moved},
		{"an older write", older, false, moved},
		{"a write at the same time", equal, true, equal},
	}
	for _, st := range steps {
		applied, err := s.UpsertContributionLink(ctx, st.write)
		must(t, err)
		if applied != st.wantApplied {
			t.Errorf("%s: applied = %v, want %v", st.name, applied, st.wantApplied)
		}
		var got []store.ContributionLink
		for _, ext := range []string{"ext-1", "ext-2"} {
			ls, err := s.ContributionLinksFrom(ctx, "ws", ext)
			must(t, err)
			got = append(got, ls...)
		}
		if want := []store.ContributionLink{st.want}; !sameLinks(got, want) {
			t.Errorf("%s: stored links = %+v, want %+v", st.name, got, want)
		}
	}
}

// testLinkTombstone: a removal hides the link from both lists and keeps a
// create older than it from bringing the link back; a newer create does.
func testLinkTombstone(t *testing.T, s store.Store) {
	ctx := context.Background()
	removal := newLink("ws", "a1", "ext-1", 20)
	removal.Removed = true
	steps := []struct {
		name        string
		write       store.ContributionLink
		wantApplied bool
		wantLive    bool
	}{
		{"a create", newLink("ws", "a1", "ext-1", 10), true, true},
		{"a removal", removal, true, false},
		{"an older create after the removal", newLink("ws", "a1", "ext-1", 15), false, false},
		{"a newer create after the removal", newLink("ws", "a1", "ext-1", 30), true, true},
	}
	for _, st := range steps {
		applied, err := s.UpsertContributionLink(ctx, st.write)
		must(t, err)
		if applied != st.wantApplied {
			t.Errorf("%s: applied = %v, want %v", st.name, applied, st.wantApplied)
		}
		to, err := s.ContributionLinksTo(ctx, "ws", "github", "github.com", "acme/api", 42)
		must(t, err)
		from, err := s.ContributionLinksFrom(ctx, "ws", "ext-1")
		must(t, err)
		var want []store.ContributionLink
		if st.wantLive {
			want = []store.ContributionLink{st.write}
		}
		if !sameLinks(to, want) || !sameLinks(from, want) {
			t.Errorf("%s: links to the contribution %+v, of the issue %+v; want %+v", st.name, to, from, want)
		}
	}
}

// testLinksToAndFrom: the links to a contribution are the live ones of
// exactly its workspace, provider, host, repository and number, ordered by
// time then link ID; the links of an issue are its live ones, by link ID.
func testLinksToAndFrom(t *testing.T, s store.Store) {
	ctx := context.Background()
	vary := func(l store.ContributionLink, change func(*store.ContributionLink)) store.ContributionLink {
		change(&l)
		return l
	}
	removed := newLink("ws", "r", "ext-1", 1)
	removed.Removed = true
	for _, l := range []store.ContributionLink{
		newLink("ws", "c", "ext-2", 1),
		newLink("ws", "a", "ext-1", 2),
		newLink("ws", "b", "ext-1", 1),
		removed,
		newLink("other", "o", "ext-1", 1),
		vary(newLink("ws", "p", "ext-1", 1), func(l *store.ContributionLink) { l.Provider = "gitea" }),
		vary(newLink("ws", "h", "ext-1", 1), func(l *store.ContributionLink) { l.Host = "ghe.example.com" }),
		vary(newLink("ws", "n", "ext-3", 1), func(l *store.ContributionLink) { l.Repository = "acme/web" }),
		vary(newLink("ws", "u", "ext-3", 1), func(l *store.ContributionLink) { l.Repository = "Acme/API" }),
		vary(newLink("ws", "m", "ext-3", 1), func(l *store.ContributionLink) { l.Number = 43 }),
	} {
		applied, err := s.UpsertContributionLink(ctx, l)
		must(t, err)
		if !applied {
			t.Fatalf("link %s was not written", l.LinkID)
		}
	}
	to, err := s.ContributionLinksTo(ctx, "ws", "github", "github.com", "acme/api", 42)
	must(t, err)
	if want := []string{"b", "c", "a"}; !slices.Equal(linkIDs(to), want) {
		t.Errorf("links to acme/api#42 = %q, want %q (by time, then link ID)", linkIDs(to), want)
	}
	if len(to) > 0 && !sameLinks(to[:1], []store.ContributionLink{newLink("ws", "b", "ext-1", 1)}) {
		t.Errorf("link b reads back as %+v", to[0])
	}
	tests := []struct {
		ws, ext string
		want    []string
	}{
		{"ws", "ext-1", []string{"a", "b", "h", "p"}},
		{"ws", "ext-2", []string{"c"}},
		{"ws", "ext-3", []string{"m", "n", "u"}},
		{"ws", "EXT-1", nil},
		{"other", "ext-1", []string{"o"}},
		{"nope", "ext-1", nil},
	}
	for _, tc := range tests {
		from, err := s.ContributionLinksFrom(ctx, tc.ws, tc.ext)
		must(t, err)
		if !slices.Equal(linkIDs(from), tc.want) {
			t.Errorf("links of %s in %s = %q, want %q", tc.ext, tc.ws, linkIDs(from), tc.want)
		}
	}
}

// linkOf is l recorded by connection c for issue ext.
func linkOf(l store.ContributionLink, c, ext string) store.ContributionLink {
	l.ConnectionID, l.ExternalID = c, ext
	return l
}

// connectionsOf is "connection/link" of each of ls, in order.
func connectionsOf(ls []store.ContributionLink) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.ConnectionID+"/"+l.LinkID)
	}
	return out
}

// testLinksKeyedByConnection: two connections of one workspace (two
// Linear organisations) recording the same link ID each keep their own
// row: one's removal, or its later or earlier write, leaves the other's
// as it is.
func testLinksKeyedByConnection(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := linkOf(newLink("ws", "att", "ext-a", 10), "ln-a", "ext-a")
	b := linkOf(newLink("ws", "att", "ext-b", 10), "ln-b", "ext-b")
	removedB := linkOf(newLink("ws", "att", "ext-b", 20), "ln-b", "ext-b")
	removedB.Removed = true
	olderA := linkOf(newLink("ws", "att", "ext-a", 5), "ln-a", "ext-a")
	olderA.URL += "?older"
	steps := []struct {
		name        string
		write       store.ContributionLink
		wantApplied bool
		wantTo      []string // connection/link of the live links to acme/api#42
	}{
		{"a's link", a, true, []string{"ln-a/att"}},
		{"b's link with the same ID", b, true, []string{"ln-a/att", "ln-b/att"}},
		{"b's removal", removedB, true, []string{"ln-a/att"}},
		{"an older write of a's", olderA, false, []string{"ln-a/att"}},
	}
	for _, st := range steps {
		applied, err := s.UpsertContributionLink(ctx, st.write)
		must(t, err)
		if applied != st.wantApplied {
			t.Errorf("%s: applied = %v, want %v", st.name, applied, st.wantApplied)
		}
		to, err := s.ContributionLinksTo(ctx, "ws", "github", "github.com", "acme/api", 42)
		must(t, err)
		if got := connectionsOf(to); !slices.Equal(got, st.wantTo) {
			t.Errorf("%s: links to the contribution = %q, want %q", st.name, got, st.wantTo)
		}
	}
	fromA, err := s.ContributionLinksFrom(ctx, "ws", "ext-a")
	must(t, err)
	if !sameLinks(fromA, []store.ContributionLink{a}) {
		t.Errorf("a's issue's links = %+v, want a's row as written", fromA)
	}
	fromB, err := s.ContributionLinksFrom(ctx, "ws", "ext-b")
	must(t, err)
	if len(fromB) != 0 {
		t.Errorf("b's issue's links = %+v, want none (removed)", fromB)
	}
}

// testLinkWithoutConnectionTakenOver: a row without a connection (from
// before links were keyed by connection) is taken over by the first
// connection writing the same link of the same issue, keeping its time;
// another connection's write of the same link ID for another issue gets a
// row of its own.
func testLinkWithoutConnectionTakenOver(t *testing.T, s store.Store) {
	ctx := context.Background()
	legacy := linkOf(newLink("ws", "att", "ext-a", 10), "", "ext-a")
	for _, st := range []struct {
		name        string
		write       store.ContributionLink
		wantApplied bool
		wantTo      []string
	}{
		{"a row without a connection", legacy, true, []string{"/att"}},
		{"another connection's link of another issue", linkOf(newLink("ws", "att", "ext-b", 12), "ln-b", "ext-b"), true,
			[]string{"/att", "ln-b/att"}},
		{"an older write of the issue's connection", linkOf(newLink("ws", "att", "ext-a", 5), "ln-a", "ext-a"), false,
			[]string{"ln-a/att", "ln-b/att"}},
		{"a newer write of the issue's connection", linkOf(newLink("ws", "att", "ext-a", 15), "ln-a", "ext-a"), true,
			[]string{"ln-b/att", "ln-a/att"}},
	} {
		applied, err := s.UpsertContributionLink(ctx, st.write)
		must(t, err)
		if applied != st.wantApplied {
			t.Errorf("%s: applied = %v, want %v", st.name, applied, st.wantApplied)
		}
		to, err := s.ContributionLinksTo(ctx, "ws", "github", "github.com", "acme/api", 42)
		must(t, err)
		if got := connectionsOf(to); !slices.Equal(got, st.wantTo) {
			t.Errorf("%s: links to the contribution = %q, want %q", st.name, got, st.wantTo)
		}
	}
}

// testFindTaskByFormerRef: a task is found by a reference it had before,
// unless a task has it now, the task is not complete, or the reference is
// another workspace's or provider's; the first alias of a reference stays,
// and deleting the task deletes its former references.
func testFindTaskByFormerRef(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	SeedWorkspace(t, s, "other")
	linear := func(task store.Task, ref string) store.Task {
		task.Source = &store.Source{Provider: "linear", Kind: "issue", Ref: ref, URL: "https://linear.app/x/" + ref}
		return task
	}
	moved := linear(newTask("ws", "ext-1", 1), "ENG-2")
	holder := linear(newTask("ws", "ext-2", 2), "ENG-7")
	formerHolder := linear(newTask("ws", "ext-3", 3), "ENG-8")
	preparing := linear(newTask("ws", "ext-4", 4), "ENG-9")
	preparing.CreationState = store.CreationPreparing
	draft := linear(newTask("ws", "ext-5", 5), "ENG-10")
	draft.CreationState = store.CreationCompleting
	elsewhere := linear(newTask("other", "ext-1", 1), "OPS-5")
	for _, task := range []store.Task{moved, holder, formerHolder, preparing, draft, elsewhere} {
		must(t, s.InsertTask(ctx, task))
	}
	for _, a := range []struct{ ws, ref, taskID string }{
		{"ws", "OPS-1", moved.ID},
		{"ws", "ENG-7", formerHolder.ID},  // holder has ENG-7 now
		{"ws", "OPS-3", preparing.ID},     // its task is not complete
		{"ws", "ENG-10", formerHolder.ID}, // the task that has ENG-10 now is not complete
		{"other", "OPS-6", elsewhere.ID},
		{"other", "OPS-7", moved.ID}, // another workspace's alias, even of this workspace's task
		{"ws", "OPS-4", moved.ID},
		{"ws", "OPS-4", formerHolder.ID}, // OPS-4 has an alias already
	} {
		must(t, s.InsertRefAlias(ctx, a.ws, "linear", a.ref, a.taskID, epoch))
	}
	tests := []struct {
		name, ws, provider, ref string
		want                    string // task ID, "" for ErrNotFound
	}{
		{"a former reference", "ws", "linear", "OPS-1", moved.ID},
		{"the current reference", "ws", "linear", "ENG-2", moved.ID},
		{"a current reference wins over a former one", "ws", "linear", "ENG-7", holder.ID},
		{"a former reference of a task being created", "ws", "linear", "OPS-3", ""},
		{"a former reference a task being created has now", "ws", "linear", "ENG-10", formerHolder.ID},
		{"another case", "ws", "linear", "ops-1", ""},
		{"another provider", "ws", "jira", "OPS-1", ""},
		{"another workspace's former reference", "ws", "linear", "OPS-6", ""},
		{"another workspace's former reference of this workspace's task", "ws", "linear", "OPS-7", ""},
		{"a former reference in its workspace", "other", "linear", "OPS-6", elsewhere.ID},
		{"another workspace", "other", "linear", "OPS-1", ""},
		{"an alias inserted twice keeps its first task", "ws", "linear", "OPS-4", moved.ID},
	}
	find := func(name, ws, provider, ref, want string) {
		t.Helper()
		got, err := s.FindTaskBySourceRef(ctx, ws, provider, ref)
		switch {
		case want == "" && !errors.Is(err, store.ErrNotFound):
			t.Errorf("%s: task %s, err %v; want ErrNotFound", name, got.ID, err)
		case want != "" && (err != nil || got.ID != want || got.Source == nil):
			t.Errorf("%s: task %s (source %+v), err %v; want %s", name, got.ID, got.Source, err, want)
		}
	}
	for _, tc := range tests {
		find(tc.name, tc.ws, tc.provider, tc.ref, tc.want)
	}
	// Deleting the task deletes its former references.
	must(t, s.DeleteTask(ctx, moved.ID))
	find("a former reference of a deleted task", "ws", "linear", "OPS-1", "")
	find("an alias of a deleted task", "ws", "linear", "OPS-4", "")
	find("another task's former reference", "ws", "linear", "ENG-10", formerHolder.ID)
}

// testProjectionsOfContribution: a contribution's rows are found in every
// task and connection of its provider's table, by repository in any case
// and the exact number; a row is deleted by its key, and only that row.
func testProjectionsOfContribution(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	// Task IDs in a known order, and rows stored in neither the order of
	// (task, connection) nor that of (connection, task).
	var tasks []string
	for i := range 3 {
		task := newTask("ws", "", i+1)
		task.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
		must(t, s.InsertTask(ctx, task))
		tasks = append(tasks, task.ID)
	}
	rows := []store.Projection{
		{Provider: "github", TaskID: tasks[1], ConnectionID: "gh", Repository: "acme/api", Number: 42},
		{Provider: "github", TaskID: tasks[0], ConnectionID: "gh-2", Repository: "Acme/API", Number: 42},
		{Provider: "github", TaskID: tasks[0], ConnectionID: "gh", Repository: "acme/api", Number: 42},
		{Provider: "github", TaskID: tasks[2], ConnectionID: "gh", Repository: "acme/api", Number: 420},
		{Provider: "github", TaskID: tasks[2], ConnectionID: "gh", Repository: "acme/web", Number: 42},
		{Provider: "gitlab", TaskID: tasks[0], ConnectionID: "gl", Repository: "acme/api", Number: 42},
		{Provider: "gitea", TaskID: tasks[2], ConnectionID: "gt", Repository: "acme/api", Number: 42},
	}
	for i := range rows {
		rows[i].ProviderID, rows[i].Title, rows[i].State = int64(i+1), "pr", "open"
		rows[i].URL = fmt.Sprintf("https://x/%d", i+1)
		must(t, s.UpsertProjection(ctx, rows[i]))
	}
	// key names a row by provider ID, with its task's position and connection.
	key := func(p store.Projection) string {
		return fmt.Sprintf("%s/%d:task%d/%s", p.Provider, p.ProviderID, slices.Index(tasks, p.TaskID), p.ConnectionID)
	}
	// ordered is the keys of rows[i...], in the order given.
	ordered := func(is ...int) []string {
		var out []string
		for _, i := range is {
			out = append(out, key(rows[i]))
		}
		return out
	}
	list := func(provider, repository string, number int64) []string {
		t.Helper()
		ps, err := s.ListProjectionsOfContribution(ctx, provider, repository, number)
		must(t, err)
		var out []string
		for _, p := range ps {
			out = append(out, key(p))
		}
		return out
	}
	tests := []struct {
		provider, repository string
		number               int64
		want                 []string
	}{
		{"github", "acme/api", 42, ordered(2, 1, 0)},
		{"github", "ACME/Api", 42, ordered(2, 1, 0)},
		{"github", "acme/api", 420, ordered(3)},
		{"github", "acme/api", 4, nil},
		{"github", "acme/web", 42, ordered(4)},
		{"gitlab", "acme/api", 42, ordered(5)},
		{"gitea", "acme/api", 42, ordered(6)},
		{"gitea", "acme/api", 420, nil},
	}
	for _, tc := range tests {
		if got := list(tc.provider, tc.repository, tc.number); !slices.Equal(got, tc.want) {
			t.Errorf("%s projections of %s#%d = %q, want %q", tc.provider, tc.repository, tc.number, got, tc.want)
		}
	}
	ps, err := s.ListProjectionsOfContribution(ctx, "gitlab", "acme/api", 42)
	must(t, err)
	if len(ps) != 1 || ps[0] != rows[5] {
		t.Errorf("the merge request reads back as %+v, want %+v", ps, rows[5])
	}
	if _, err := s.ListProjectionsOfContribution(ctx, "nope", "acme/api", 42); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("projections of a provider without a table: err %v, want ErrNotFound", err)
	}

	target := rows[2]
	otherTable, otherConnection, otherID := target, target, target
	otherTable.Provider, otherConnection.ConnectionID, otherID.ProviderID = "gitea", "gh-2", 2
	deletes := []struct {
		name        string
		p           store.Projection
		wantDeleted bool
	}{
		{"another provider's table", otherTable, false},
		{"another connection", otherConnection, false},
		{"another provider ID", otherID, false},
		{"the row", target, true},
		{"the row again", target, false},
	}
	for _, d := range deletes {
		deleted, err := s.DeleteProjection(ctx, d.p)
		must(t, err)
		if deleted != d.wantDeleted {
			t.Errorf("delete %s: deleted = %v, want %v", d.name, deleted, d.wantDeleted)
		}
	}
	if got, want := list("github", "acme/api", 42), ordered(1, 0); !slices.Equal(got, want) {
		t.Errorf("after the delete: %q, want %q", got, want)
	}
	all, err := s.ListProjectionsForTasks(ctx, tasks...)
	must(t, err)
	if len(all) != len(rows)-1 {
		t.Errorf("rows after one delete = %d, want %d", len(all), len(rows)-1)
	}
}
