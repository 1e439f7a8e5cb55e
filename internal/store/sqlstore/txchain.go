package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/trackergateway/gateway/internal/store"
)

// InTxThen runs first and then as two transactions (store.Store). Where the
// driver's transactions chain (Chainer: PostgreSQL) the first one's COMMIT
// rides with the second one's first round trip; elsewhere, and when ctx
// shares commits (SQLite), it is two InTx calls.
func (s *Store) InTxThen(ctx context.Context, first func(store.Queries) error, between func() error,
	thenCtx context.Context, then func(store.Queries) error) (firstErr, thenErr error) {
	if store.SharedCommit(ctx) && s.shared.enabled {
		return s.inTxThenApart(ctx, first, between, thenCtx, then)
	}
	ctx1, cancel1 := withDeadline(ctx)
	defer cancel1()
	tx1, err := s.driver.Begin(ctx1)
	if err != nil {
		return fmt.Errorf("begin: %w", s.classify(err)), nil
	}
	if err := s.runInTx(ctx1, tx1, first); err != nil {
		_ = tx1.Rollback(context.WithoutCancel(ctx1))
		return err, nil
	}
	chain, chains := tx1.(Chainer)
	if between != nil || !chains {
		// between runs once first has committed (it may stand for a crash
		// after that commit, or wait while others look at its result), so
		// it forgoes the chaining; so does a driver that cannot chain.
		if err := s.commit(ctx1, tx1); err != nil {
			return err, nil
		}
		return nil, s.second(between, thenCtx, then)
	}
	ctx2, cancel2 := withDeadline(thenCtx)
	defer cancel2()
	tx2, err := chain.CommitThenBegin(ctx2)
	if err != nil {
		return fmt.Errorf("commit: %w", s.classify(err)), nil
	}
	err = s.runInTx(ctx2, tx2, then)
	if err == nil {
		err = tx2.Commit(ctx2)
		if err == nil {
			return nil, nil
		}
		if commitErr := chainedCommit(err); commitErr != nil {
			return fmt.Errorf("commit: %w", s.classify(commitErr)), nil
		}
		return nil, fmt.Errorf("commit: %w", s.classify(err))
	}
	// Rolling back sends first's COMMIT if then sent nothing.
	rollbackErr := tx2.Rollback(context.WithoutCancel(ctx2))
	for _, e := range []error{err, rollbackErr} {
		if commitErr := chainedCommit(e); commitErr != nil {
			return fmt.Errorf("commit: %w", s.classify(commitErr)), nil
		}
	}
	return nil, err
}

// inTxThenApart is InTxThen as two InTx calls.
func (s *Store) inTxThenApart(ctx context.Context, first func(store.Queries) error, between func() error,
	thenCtx context.Context, then func(store.Queries) error) (firstErr, thenErr error) {
	if err := s.InTx(ctx, first); err != nil {
		return err, nil
	}
	return nil, s.second(between, thenCtx, then)
}

// second runs between, then then in a transaction of its own, once the
// first transaction has committed.
func (s *Store) second(between func() error, thenCtx context.Context, then func(store.Queries) error) error {
	if between != nil {
		if err := between(); err != nil {
			return err
		}
	}
	return s.InTx(thenCtx, then)
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

// chainedCommit is the failure of an earlier transaction's commit carried
// in err, or nil.
func chainedCommit(err error) error {
	var ce *ChainedCommitError
	if errors.As(err, &ce) {
		return ce.Err
	}
	return nil
}
