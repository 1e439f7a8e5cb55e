package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/trackergateway/gateway/internal/store"
)

// InTxChain runs steps as consecutive transactions (store.Store). Where the
// driver's transactions chain (Chainer: PostgreSQL) each step's COMMIT rides
// with the next step's first round trip; when ctx shares commits (SQLite)
// the chain is one member of a group (inSharedChain); elsewhere it is one
// InTx per step.
func (s *Store) InTxChain(ctx context.Context, steps ...store.TxStep) (int, error) {
	if len(steps) == 0 {
		return 0, nil
	}
	if store.SharedCommit(ctx) && s.shared.enabled {
		return s.inSharedChain(ctx, steps)
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	tx, err := s.driver.Begin(stepContext(ctx, steps[0]))
	if err != nil {
		return 0, fmt.Errorf("begin: %w", s.classify(err))
	}
	for i, step := range steps {
		if i > 0 {
			chain, ok := tx.(Chainer)
			if !ok {
				if err := s.commit(ctx, tx); err != nil {
					return i - 1, err
				}
				n, err := s.inTxApart(ctx, steps[i:])
				return i + n, err
			}
			if tx, err = chain.CommitThenBegin(stepContext(ctx, step)); err != nil {
				// The failure is the previous step's, or one it carried.
				if ce := chainedCommit(err); ce != nil {
					return s.chainedFailure(i-1, ce)
				}
				return i - 1, fmt.Errorf("commit: %w", s.classify(err))
			}
		}
		if err := s.runInTx(ctx, tx, step.Fn); err != nil {
			// Rolling back sends the earlier steps' COMMITs if this one
			// sent nothing; either may report such a commit's failure.
			rollbackErr := tx.Rollback(context.WithoutCancel(ctx))
			for _, e := range []error{err, rollbackErr} {
				if ce := chainedCommit(e); ce != nil {
					return s.chainedFailure(i, ce)
				}
			}
			return i, err
		}
	}
	last := len(steps) - 1
	if err := tx.Commit(ctx); err != nil {
		if ce := chainedCommit(err); ce != nil {
			return s.chainedFailure(last, ce)
		}
		return last, fmt.Errorf("commit: %w", s.classify(err))
	}
	return len(steps), nil
}

// inTxApart is InTxChain as one transaction per step, none shared.
func (s *Store) inTxApart(ctx context.Context, steps []store.TxStep) (int, error) {
	for i, step := range steps {
		if err := s.inTx(stepContext(ctx, step), step.Fn); err != nil {
			return i, err
		}
	}
	return len(steps), nil
}

// stepContext is ctx with the step's sync level.
func stepContext(ctx context.Context, step store.TxStep) context.Context {
	if step.DeferredSync {
		return store.WithDeferredSync(ctx)
	}
	return ctx
}

// runInTx runs fn on tx; a panic rolls tx back (which, for a chained
// transaction, still sends the commit it carries) and goes on.
func (s *Store) runInTx(ctx context.Context, tx Tx, fn func(store.Queries) error) error {
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
	}()
	return fn(queries{ex: tx, d: s.driver, inTx: true})
}

func (s *Store) commit(ctx context.Context, tx Tx) error {
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", s.classify(err))
	}
	return nil
}

// chainedFailure is InTxChain's answer when step i met the failed commit of
// an earlier step, ce.Back steps before it: that step did not commit.
func (s *Store) chainedFailure(i int, ce *ChainedCommitError) (int, error) {
	return i - ce.Back, fmt.Errorf("commit: %w", s.classify(ce.Err))
}

// chainedCommit is the failure of an earlier transaction's commit carried
// in err, or nil.
func chainedCommit(err error) *ChainedCommitError {
	var ce *ChainedCommitError
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}
