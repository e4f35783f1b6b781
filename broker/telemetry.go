package broker

// registerTelemetryHandlers registers KIP-714's client telemetry APIs,
// GetTelemetrySubscriptions (71) and PushTelemetry (72).
func (b *Broker) registerTelemetryHandlers(r quotaRouter) {}
