package groups

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// errCode is the Kafka code of an error from the coordinator's lookups,
// which are already *kerr.Error values.
func errCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
