package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/tasks"
)

// No argument is marked required in the schemas: the REST functions check
// them in their own order (the caller's access first; for a create, the
// external ID and the lookup before anything else, so a retry finds its
// task even when its other fields would now be refused), and a missing one
// gets the REST API's message.

type createTaskInput struct {
	WorkspaceID    string   `json:"workspace_id,omitempty" jsonschema:"Required. The workspace to create the task in (list_tasks and the REST API name workspaces by this ID)."`
	Title          string   `json:"title,omitempty" jsonschema:"Required for a new task. A short summary of the work."`
	Description    string   `json:"description,omitempty" jsonschema:"Optional longer text (Markdown is kept as given)."`
	WorkflowStepID string   `json:"workflow_step_id,omitempty" jsonschema:"Optional workflow step to put the task in; default: the workspace's first step."`
	Labels         []string `json:"labels,omitempty" jsonschema:"Optional labels."`
	ExternalID     *string  `json:"external_id,omitempty" jsonschema:"Optional but recommended: your stable identity for this task (at most 255 bytes, no control characters, compared exactly). A repeated create with the same external_id answers the existing task instead of making a second one."`
}

type externalIDInput struct {
	WorkspaceID string `json:"workspace_id,omitempty" jsonschema:"Required. The workspace the external ID belongs to."`
	ExternalID  string `json:"external_id,omitempty" jsonschema:"Required. The external ID, exactly as given to create_task."`
}

type releaseOutput struct {
	Released bool `json:"released" jsonschema:"Always true: the external ID is free and the task that held it keeps existing without it."`
}

type listTasksInput struct {
	WorkspaceID     string `json:"workspace_id,omitempty" jsonschema:"Required. The workspace to list."`
	Limit           int    `json:"limit,omitempty" jsonschema:"Page size, 1 to 1000; default 100."`
	Cursor          string `json:"cursor,omitempty" jsonschema:"The next_cursor of the previous page, to read the next one."`
	IncludeArchived bool   `json:"include_archived,omitempty" jsonschema:"Also list archived tasks."`
}

type listTaskEventsInput struct {
	WorkspaceID string `json:"workspace_id,omitempty" jsonschema:"Required. The workspace whose events to list."`
	After       string `json:"after,omitempty" jsonschema:"Only events after this one: an event id, or the next_cursor of the previous page. Empty: from the oldest event kept."`
	Type        string `json:"type,omitempty" jsonschema:"Only events of these types, a comma list: task.created, task.updated, task.archived, task.unarchived, task.deleted, task.contribution_linked, task.contribution_updated, task.contribution_unlinked."`
	Limit       int    `json:"limit,omitempty" jsonschema:"Page size, 1 to 1000; default 100."`
	Wait        string `json:"wait,omitempty" jsonschema:"When nothing newer exists, wait this long for an event to happen (10s, or a number of seconds; at most 30s). Default: answer at once."`
}

// eventPage is the feed's page (events.Page) as the tool answers it: the
// same JSON, with each event's data decoded, so the output schema the SDK
// infers from this type says data is an object.
type eventPage struct {
	Events     []event `json:"events"`
	NextCursor string  `json:"next_cursor"`
}

type event struct {
	ID          string         `json:"id"`
	Type        string         `json:"type"`
	Timestamp   time.Time      `json:"timestamp"`
	WorkspaceID string         `json:"workspace_id"`
	Data        map[string]any `json:"data"`
}

func toEventPage(p events.Page) (eventPage, error) {
	out := eventPage{Events: make([]event, 0, len(p.Events)), NextCursor: p.NextCursor}
	for _, e := range p.Events {
		ev := event{ID: e.ID, Type: e.Type, Timestamp: e.Timestamp, WorkspaceID: e.WorkspaceID}
		if err := json.Unmarshal(e.Data, &ev.Data); err != nil {
			return eventPage{}, fmt.Errorf("event %s: %w", e.ID, err)
		}
		out.Events = append(out.Events, ev)
	}
	return out, nil
}

type updateTaskInput struct {
	TaskID string `json:"task_id,omitempty" jsonschema:"Required. The task's id (the UUID in the id field of a task, not its identifier such as TASK-12)."`
	taskPatch
}

// taskPatch is the PATCH body of an update: update_task's arguments but the
// task's ID; absent fields stay as they are.
type taskPatch struct {
	Title          *string   `json:"title,omitempty" jsonschema:"A new title."`
	Description    *string   `json:"description,omitempty" jsonschema:"A new description."`
	WorkflowStepID *string   `json:"workflow_step_id,omitempty" jsonschema:"Move the task to this workflow step (refused when the step is at its WIP limit)."`
	Labels         *[]string `json:"labels,omitempty" jsonschema:"Replace the labels with these ([] removes them all)."`
	Archived       *bool     `json:"archived,omitempty" jsonschema:"true archives the task, false brings it back."`
}

// deliveryFilter is the filters of the delivery list and the bulk replay
// (inbox.FilterParams).
type deliveryFilter struct {
	Status         string `json:"status,omitempty" jsonschema:"One of queued, processing, retrying, succeeded, ignored, suppressed, failed."`
	Connection     string `json:"connection,omitempty" jsonschema:"The connection ID the webhook was posted to, e.g. github."`
	Event          string `json:"event,omitempty" jsonschema:"The event and its actions: issues matches issues, issues.opened, issues.closed...; issues.opened matches itself."`
	ReceivedAfter  string `json:"received_after,omitempty" jsonschema:"Received at or after this RFC 3339 time."`
	ReceivedBefore string `json:"received_before,omitempty" jsonschema:"Received at or before this RFC 3339 time."`
	ErrorContains  string `json:"error_contains,omitempty" jsonschema:"A substring of the last error, ignoring case."`
	ExternalID     string `json:"external_id,omitempty" jsonschema:"The external ID of the delivery's outcome, exactly."`
	DeliveryKey    string `json:"delivery_key,omitempty" jsonschema:"The provider's delivery ID (GitHub's X-GitHub-Delivery GUID, GitLab's Idempotency-Key...), exactly, with or without the hook ID and colon the gateway stores before a GitHub GUID."`
}

type listDeliveriesInput struct {
	deliveryFilter
	Limit  int    `json:"limit,omitempty" jsonschema:"Page size, 1 to 1000; default 100."`
	Cursor string `json:"cursor,omitempty" jsonschema:"The next_cursor of the previous page, to read the next one."`
}

type replayDeliveriesInput struct {
	deliveryFilter
	DryRun bool `json:"dry_run,omitempty" jsonschema:"Change nothing; answer what a replay would requeue now."`
	Max    *int `json:"max,omitempty" jsonschema:"At most this many of the newest matching deliveries are considered, 1 to 100000; default 10000."`
}

// addTool adds a tool whose work is fn, run as the caller. fn's error
// becomes the tool error the REST API would have answered: the error
// table's message (a generic one for a 500, whose cause is logged).
//
// The arguments are checked as a REST body is (httpapi.CheckJSONText)
// before fn runs: the SDK has already decoded them into in, turning text
// that is not UTF-8 into U+FFFD, so the check reads the raw arguments.
func addTool[In, Out any](s *mcp.Server, t toolset, tool *mcp.Tool, fn func(ctx context.Context, in In) (Out, error)) {
	mcp.AddTool(s, tool, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var out Out
		err := httpapi.CheckJSONText(req.Params.Arguments)
		if err == nil {
			// The task events a tool's work makes name the agent tools
			// as their cause.
			ctx := events.WithCause(httpapi.WithPrincipal(ctx, t.caller), events.Cause{Actor: events.ActorMCP})
			out, err = fn(ctx, in)
		}
		if err != nil {
			_, message := httpapi.Describe(ctx, t.logger, err, "mcp_tool", tool.Name, "principal", t.caller.Name)
			return nil, out, errors.New(message)
		}
		return nil, out, nil
	})
}

// createTaskDescription says the three things an agent must know of an
// idempotent create (docs/design.md, "External-ID idempotency"): it
// creates when nothing holds the identity, so it is no way to check;
// deduplicated: true means nothing was created; and deduplicated: true with
// creation_complete: false means another create may still be running, so
// the task is not ready and the identity must not be released to create
// again.
const createTaskDescription = "Create a task in a workspace, at most once per external_id. This is " +
	"create-if-absent, not a lookup: when no task holds the external_id, this call creates one, so never " +
	"call it just to check whether a task exists (get_task_by_external_id does that). deduplicated: true " +
	"means the task already existed and nothing was created: do not report that you created a task (its " +
	"other fields were neither compared nor changed). deduplicated: true together with creation_complete: " +
	"false means another create claimed this external_id and had not finished when this call looked, and " +
	"may still be in progress: do not assume the task is ready, and do not release the external_id and " +
	"create again; wait, then look it up with get_task_by_external_id. Replay the arguments of the first " +
	"call. Without an external_id every call makes a new task."

// addTaskTools adds the tools every caller has.
func (t toolset) addTaskTools(s *mcp.Server) {
	addTool(s, t, &mcp.Tool{
		Name:        "create_task",
		Description: createTaskDescription,
		Annotations: &mcp.ToolAnnotations{Title: "Create a task", IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, func(ctx context.Context, in createTaskInput) (tasks.CreateJSON, error) {
		raw, err := json.Marshal(in)
		if err != nil {
			return tasks.CreateJSON{}, err
		}
		return t.tasks.Create(ctx, t.caller, raw)
	})

	addTool(s, t, &mcp.Tool{
		Name: "get_task_by_external_id",
		Description: "Find the task holding an external ID in a workspace, archived tasks included. The safest " +
			"way to resume after an interruption: look up first and create only when this answers that no " +
			"task was found. creation_complete is false while the task's creation is still running.",
		Annotations: &mcp.ToolAnnotations{Title: "Find a task by external ID", ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, func(ctx context.Context, in externalIDInput) (tasks.LookupJSON, error) {
		return t.tasks.Lookup(ctx, t.caller, in.WorkspaceID, in.ExternalID)
	})

	addTool(s, t, &mcp.Tool{
		Name: "release_external_id",
		Description: "Free an external ID: the task keeps existing without it, and the next create_task with " +
			"that ID makes a new task. Only for an identity that is deliberately abandoned; never as a " +
			"reaction to creation_complete: false.",
		Annotations: &mcp.ToolAnnotations{Title: "Release an external ID", IdempotentHint: false, DestructiveHint: new(true), OpenWorldHint: new(false)},
	}, func(ctx context.Context, in externalIDInput) (releaseOutput, error) {
		err := t.tasks.Release(ctx, t.caller, in.WorkspaceID, in.ExternalID)
		return releaseOutput{Released: err == nil}, err
	})

	addTool(s, t, &mcp.Tool{
		Name: "list_tasks",
		Description: "List a workspace's tasks, oldest first, a page at a time: pass next_cursor back as cursor " +
			"for the next page (absent on the last one). Archived tasks only with include_archived.",
		Annotations: &mcp.ToolAnnotations{Title: "List tasks", ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, func(ctx context.Context, in listTasksInput) (tasks.TaskListJSON, error) {
		query := url.Values{}
		setNonZero(query, "limit", in.Limit)
		setNonEmpty(query, "cursor", in.Cursor)
		if in.IncludeArchived {
			query.Set("include_archived", "true")
		}
		return t.tasks.List(ctx, t.caller, in.WorkspaceID, query)
	})

	addTool(s, t, &mcp.Tool{
		Name: "list_task_events",
		Description: "List what happened to a workspace's tasks, oldest first: each event has an id, a type " +
			"(task.created, task.updated, task.archived, task.unarchived, task.deleted, " +
			"task.contribution_linked, task.contribution_updated, task.contribution_unlinked), a timestamp and " +
			"data: the task at that revision, the fields that changed, the pull or merge request of a " +
			"contribution event, and the cause (a tracker's delivery, or the API, the agent tools or an " +
			"operator). Pass next_cursor back as after to read on; it is always present.",
		Annotations: &mcp.ToolAnnotations{Title: "List task events", ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, func(ctx context.Context, in listTaskEventsInput) (eventPage, error) {
		query := url.Values{}
		setNonEmpty(query, "after", in.After)
		setNonEmpty(query, "type", in.Type)
		setNonZero(query, "limit", in.Limit)
		setNonEmpty(query, "wait", in.Wait)
		page, err := t.events.List(ctx, t.caller, in.WorkspaceID, query)
		if err != nil {
			return eventPage{}, err
		}
		return toEventPage(page)
	})

	addTool(s, t, &mcp.Tool{
		Name: "update_task",
		Description: "Change a task: only the fields given change. The external ID cannot be changed (release " +
			"it instead). Moving into a workflow step at its WIP limit is refused.",
		Annotations: &mcp.ToolAnnotations{Title: "Update a task", IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, func(ctx context.Context, in updateTaskInput) (tasks.TaskJSON, error) {
		body := func() ([]byte, error) { return json.Marshal(in.taskPatch) }
		return t.tasks.Update(ctx, t.caller, in.TaskID, body)
	})
}

// addDeliveryTools adds the operator tools (the admin's only).
func (t toolset) addDeliveryTools(s *mcp.Server) {
	addTool(s, t, &mcp.Tool{
		Name: "list_deliveries",
		Description: "Operators: list the webhook deliveries the gateway received, newest first, with their " +
			"status, attempts, last error and outcome (the task and action they led to). Every filter is " +
			"optional and they all apply together; page with next_cursor as for list_tasks. With " +
			"error_contains a page may be short, even empty, and still have a next_cursor: keep going " +
			"until it is absent.",
		Annotations: &mcp.ToolAnnotations{Title: "List webhook deliveries", ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, func(ctx context.Context, in listDeliveriesInput) (inbox.DeliveryListJSON, error) {
		query := url.Values{}
		for name, value := range in.deliveryFilter.byName() {
			setNonEmpty(query, name, value)
		}
		setNonZero(query, "limit", in.Limit)
		setNonEmpty(query, "cursor", in.Cursor)
		return t.deliveries.ListJSON(ctx, query)
	})

	addTool(s, t, &mcp.Tool{
		Name: "replay_deliveries",
		Description: "Operators: process again the finished deliveries (succeeded, ignored, suppressed, failed) " +
			"that the filters match, with today's configuration; at least one filter is required. Queued, " +
			"processing and retrying ones are skipped. Try dry_run first: it changes nothing and answers " +
			"would_replay (how many a replay would requeue now) where a replay answers replayed. " +
			"The answer shows the first 20 matched deliveries.",
		Annotations: &mcp.ToolAnnotations{Title: "Replay webhook deliveries", DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, func(ctx context.Context, in replayDeliveriesInput) (inbox.ReplayResultJSON, error) {
		f := in.deliveryFilter
		return t.deliveries.ReplayMatchingJSON(ctx, inbox.ReplayRequest{Status: f.Status, Connection: f.Connection, Event: f.Event,
			ReceivedAfter: f.ReceivedAfter, ReceivedBefore: f.ReceivedBefore, ErrorContains: f.ErrorContains,
			ExternalID: f.ExternalID, DeliveryKey: f.DeliveryKey, DryRun: in.DryRun, Max: in.Max})
	})
}

// byName returns the filters by their query parameter names.
func (f deliveryFilter) byName() map[string]string {
	return map[string]string{"status": f.Status, "connection": f.Connection, "event": f.Event,
		"received_after": f.ReceivedAfter, "received_before": f.ReceivedBefore,
		"error_contains": f.ErrorContains, "external_id": f.ExternalID, "delivery_key": f.DeliveryKey}
}

func setNonEmpty(query url.Values, name, value string) {
	if value != "" {
		query.Set(name, value)
	}
}

func setNonZero(query url.Values, name string, value int) {
	if value != 0 {
		query.Set(name, strconv.Itoa(value))
	}
}
