package gitea

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	sdk "code.gitea.io/sdk/gitea"
)

// Gitea's API offers no delivery history to replay, so missed deliveries are
// recovered by listing the issues and
// pull requests updated in a window through the API and feeding each in as
// if Gitea had sent it. IssueDelivery and PullRequestDelivery build those
// deliveries.

// syntheticAction is the action of a recovered delivery: an update that
// carries the item's current state (an update creates the task when none
// exists and the filters match, and Closed reports the state).
const syntheticAction = "edited"

// syntheticRepository is the part of a webhook's repository that a recovered
// delivery fills in from the API's answer.
type syntheticRepository struct {
	ID       int64  `json:"id,omitempty"`
	Name     string `json:"name,omitempty"`
	FullName string `json:"full_name"`
}

// IssueDelivery returns the headers (Content-Type, X-Gitea-Event and
// X-Gitea-Event-Type; no signature and no delivery key, which the caller
// sets) and body of an "issues" delivery with action "edited" about issue
// as the API returned it: parsed, it gives the issue's current state. issue
// must name its repository (the API's issue.repository) and must not be a
// pull request.
func IssueDelivery(issue *sdk.Issue) (http.Header, []byte, error) {
	if issue == nil {
		return nil, nil, errors.New("issue delivery: no issue")
	}
	if issue.PullRequest != nil {
		return nil, nil, fmt.Errorf("issue delivery: issue %d is a pull request", issue.ID)
	}
	if issue.Repository == nil || issue.Repository.FullName == "" {
		return nil, nil, fmt.Errorf("issue delivery: issue %d has no repository", issue.ID)
	}
	body, err := json.Marshal(struct {
		Action     string               `json:"action"`
		Number     int64                `json:"number"`
		Issue      *sdk.Issue           `json:"issue"`
		Repository *syntheticRepository `json:"repository"`
	}{syntheticAction, issue.Index, issue, &syntheticRepository{
		ID: issue.Repository.ID, Name: issue.Repository.Name, FullName: issue.Repository.FullName}})
	if err != nil {
		return nil, nil, fmt.Errorf("issue delivery: %w", err)
	}
	return syntheticHeader(eventIssues), body, nil
}

// PullRequestDelivery is IssueDelivery for a pull request: a
// "pull_request" delivery with action "edited" whose repository is the
// pull request's base repository (base.repo). Its draft member is the
// API's, or the default work-in-progress title prefix for a Gitea that
// reports no draft.
func PullRequestDelivery(pr *sdk.PullRequest) (http.Header, []byte, error) {
	if pr == nil {
		return nil, nil, errors.New("pull request delivery: no pull request")
	}
	if pr.Base == nil || pr.Base.Repository == nil || pr.Base.Repository.FullName == "" {
		return nil, nil, fmt.Errorf("pull request delivery: pull request %d has no base repository", pr.ID)
	}
	withDraft := *pr
	withDraft.Draft = pr.Draft || isDraft(nil, pr.Title)
	repo := pr.Base.Repository
	body, err := json.Marshal(struct {
		Action      string               `json:"action"`
		Number      int64                `json:"number"`
		PullRequest *sdk.PullRequest     `json:"pull_request"`
		Repository  *syntheticRepository `json:"repository"`
	}{syntheticAction, pr.Index, &withDraft, &syntheticRepository{ID: repo.ID, Name: repo.Name, FullName: repo.FullName}})
	if err != nil {
		return nil, nil, fmt.Errorf("pull request delivery: %w", err)
	}
	return syntheticHeader(eventPullRequest), body, nil
}

func syntheticHeader(event string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderEvent, event)
	h.Set(HeaderEventType, event)
	return h
}
