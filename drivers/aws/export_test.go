package aws

// The retry delays, for the black-box tests.
const (
	DeletePollInterval = deletePollInterval
	ConsistencyRetry   = consistencyRetry
)
