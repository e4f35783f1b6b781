package broker

import (
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/txn"
)

// errorCode turns an internal error into the Kafka error code a client gets.
// It is the single place where that mapping lives: controller errors already
// carry a *kerr.Error, logstore errors are sentinels mapped here, anything
// else is UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	switch {
	case errors.Is(err, logstore.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, logstore.ErrCorruptMessage):
		return kerr.CorruptMessage.Code
	case errors.Is(err, logstore.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, logstore.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, logstore.ErrMessageTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, logstore.ErrRecordListTooLarge):
		return kerr.RecordListTooLarge.Code
	case errors.Is(err, logstore.ErrLogOffline):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, logstore.ErrLogClosed):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, logstore.ErrKafkaStorage):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, txn.ErrBatchOutOfOrder):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, txn.ErrBatchStaleEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, txn.ErrBatchNotTransactional):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, txn.ErrMarkerCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is the text for a response's ErrorMessage field: the error's
// own words without the Kafka code's name in front when there is more to
// say, nil when there is no error.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	msg := err.Error()
	// A kerr error reads "NAME: Description."; wrapped as
	// fmt.Errorf("%w: detail", kerr.X) it reads "NAME: Description.: detail".
	// The code already names the error, so the client gets the detail
	// alone, or the description when there is none.
	var ke *kerr.Error
	if errors.As(err, &ke) {
		if detail, ok := strings.CutPrefix(msg, ke.Error()+": "); ok {
			msg = detail
		} else {
			msg = strings.TrimPrefix(msg, ke.Message+": ")
		}
	}
	return &msg
}
