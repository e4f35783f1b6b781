package protocol

import (
	"context"
	"reflect"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions (key 18), served by the router itself because its answer is
// the router's own table.
//
// Versions: 0 to kmsg's max. v1 adds ThrottleMillis; v3 (KIP-511) makes it
// flexible and adds the client's software name and version; v3+ responses
// carry the supported and finalized features (KIP-584) when the router has
// a source of them (SetFeatures).
//
// A request at a version above the supported max gets Kafka's fallback
// (KIP-511): a v0 response, header v0, with UNSUPPORTED_VERSION and the api
// key list, so that the client can pick a version it shares with us and ask
// again. Kafka itself lists only the ApiVersions key in that fallback; we
// send the whole table, which clients accept too (the Java client looks up
// key 18 in it; franz-go uses a full table directly and saves a round trip).
//
// At v3+, a client software name or version that does not match Kafka's
// pattern is answered INVALID_REQUEST with no keys, as Kafka does.
//
// v5 (KIP-1242, Kafka 4.4) adds the ClusterID and NodeID of the broker the
// client believes it is connecting to, so that a connection routed to the
// wrong broker or cluster (a stale address after a Kubernetes roll, a
// misconfigured load balancer) is caught before it does harm. As in
// Kafka's KafkaApis.handleApiVersionsRequest (clusterIdOrNodeIdIsInvalid):
//
//   - a null ClusterID with NodeID -1 is a bootstrapping client (Kafka's
//     and franz-go's clients send ids only to a broker they learned from
//     Metadata, never to a seed) and gets the table;
//   - ClusterID and NodeID come together or not at all: one without the
//     other is INVALID_REQUEST with no keys (what Kafka 4.4 answers to a
//     NodeID without a ClusterID, franz-go #1449, found against the 4.4.0
//     release candidate; kmsg's field documentation says the same of
//     either half alone);
//   - otherwise, if either differs from this listener's identity
//     (SetIdentity), the answer is REBOOTSTRAP_REQUIRED with no keys
//     (Kafka's getErrorResponse lists keys only with UNSUPPORTED_VERSION;
//     the response has no error message field), and the client drops what
//     it knows and bootstraps again. The connection stays open, as in
//     Kafka; the client closes it.
//
// A router without an identity (the controller channel, whose clients are
// this cluster's own brokers dialing a seed address and so never naming
// ids; Kafka's check lives in the broker's KafkaApis), or whose identity
// has no cluster id yet, skips the last check.

// Features is what ApiVersions v3+ reports of the KIP-584 feature levels.
type Features struct {
	// Supported is every feature this node supports at a level above 0,
	// with its supported range.
	Supported []SupportedFeature
	// FinalizedEpoch is the epoch of Finalized, -1 when unknown.
	FinalizedEpoch int64
	// Finalized is the finalized level of every feature above level 0.
	Finalized []FinalizedFeature
}

// SupportedFeature is one feature's supported range of levels.
type SupportedFeature struct {
	Name     string
	Min, Max int16
}

// FinalizedFeature is one feature's finalized level.
type FinalizedFeature struct {
	Name  string
	Level int16
}

// SetFeatures gives the router the source of the feature levels that
// ApiVersions v3+ reports; features is called for each such request. As
// Kafka's ApiVersionsResponse does, a supported feature whose minimum is 0
// is left out below v4 (older clients cannot decode it, KAFKA-17492), and
// a finalized level of 0 is never listed. A router without a source (the
// controller channel) reports no features.
func (r *Router) SetFeatures(features func() Features) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.features = features
}

// addFeatures fills resp's feature fields at v3+ from the router's source.
func (r *Router) addFeatures(resp *kmsg.ApiVersionsResponse) {
	r.mu.RLock()
	source := r.features
	r.mu.RUnlock()
	if source == nil || resp.Version < 3 {
		return
	}
	f := source()
	for _, s := range f.Supported {
		if s.Min == 0 && resp.Version < 4 {
			continue
		}
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = s.Name, s.Min, s.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	resp.FinalizedFeaturesEpoch = f.FinalizedEpoch
	for _, fin := range f.Finalized {
		if fin.Level == 0 {
			continue
		}
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = fin.Name, fin.Level, fin.Level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
}

// softwarePattern is Kafka's rule for ClientSoftwareName/Version (KIP-511):
// alphanumerics, dots and dashes, starting and ending alphanumeric.
var softwarePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

// SetIdentity gives the router the cluster id and node id its listener
// answers for, which ApiVersions v5+ checks a client's against (KIP-1242).
// id is called for each such request, so it may report a cluster id that
// becomes known after serving starts; until then it returns "" and the
// check is skipped. A nil id removes the check. The identity lives in the
// ApiVersions route's handler, swapped under the routes' lock, so this may
// be called at any time.
func (r *Router) SetIdentity(id func() (clusterID string, nodeID int32)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.routes[apiVersionsKey]
	rt.handler = r.serveApiVersions
	if id != nil {
		rt.handler = func(_ context.Context, req *Request) (kmsg.Response, error) {
			return r.answerApiVersions(req, id)
		}
	}
	r.routes[apiVersionsKey] = rt
}

// serveApiVersions answers a supported-version ApiVersions request on a
// router without an identity.
func (r *Router) serveApiVersions(_ context.Context, req *Request) (kmsg.Response, error) {
	return r.answerApiVersions(req, nil)
}

// answerApiVersions answers a supported-version ApiVersions request,
// checking v5's ids against id when it is not nil.
func (r *Router) answerApiVersions(req *Request, id func() (string, int32)) (kmsg.Response, error) {
	in := req.Body.(*kmsg.ApiVersionsRequest)
	resp := in.ResponseKind().(*kmsg.ApiVersionsResponse)
	if in.Version >= 3 && (!softwarePattern.MatchString(in.ClientSoftwareName) || !softwarePattern.MatchString(in.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if in.Version >= 3 && req.Conn != nil {
		req.Conn.software.Store(&[2]string{in.ClientSoftwareName, in.ClientSoftwareVersion})
	}
	if in.Version >= 5 {
		if (in.ClusterID == nil) != (in.NodeID == -1) {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		if in.ClusterID != nil && id != nil && r.misrouted(req, id, *in.ClusterID, in.NodeID) {
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return resp, nil
		}
	}
	resp.ApiKeys = r.Versions()
	r.addFeatures(resp)
	return resp, nil
}

// misrouted reports whether the cluster and node a client named in
// ApiVersions v5 are not this listener's. It logs a mismatch at Debug, as
// Kafka logs it at trace: the client rebootstraps and finds the right
// broker, and a client's stale address is no fault of this broker.
func (r *Router) misrouted(req *Request, id func() (string, int32), clusterID string, nodeID int32) bool {
	ours, ourNode := id()
	if ours == "" || (clusterID == ours && nodeID == ourNode) {
		return false
	}
	attrs := append(r.attrs(req.Conn, req.Header, true, nil),
		"named_cluster_id", clusterID, "named_node_id", nodeID, "cluster_id", ours, "node_id", ourNode)
	r.logger.Debug("protocol: ApiVersions names another cluster or node, answering REBOOTSTRAP_REQUIRED", attrs...)
	return true
}

// apiVersionsFallback is the KIP-511 answer to an ApiVersions request at a
// version we do not support: always v0 with header v0, whatever was asked,
// because v0 is the one encoding every client can read.
func (r *Router) apiVersionsFallback(h Header) []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = r.Versions()
	return AppendResponse(nil, h.CorrelationID, ResponseHeaderV0, resp)
}

// unsupportedVersion answers a registered key asked at a version outside its
// registered range. ApiVersions gets the KIP-511 fallback. Any other key
// gets its own response type with a top-level ErrorCode of
// UNSUPPORTED_VERSION, if kmsg can encode that response at the asked version
// and the error code is on the wire at that version; otherwise there is no
// way to tell the client, and the connection is closed, which is what Kafka
// does for every key but ApiVersions.
func (r *Router) unsupportedVersion(conn *ConnInfo, h Header, rt route) ([]byte, error) {
	if h.APIKey == apiVersionsKey {
		r.logger.Debug("protocol: ApiVersions above supported version, sending fallback", r.attrs(conn, h, true, nil)...)
		return r.apiVersionsFallback(h), nil
	}
	resp, ok := errorResponse(h.APIKey, h.APIVersion, kerr.UnsupportedVersion.Code)
	if !ok {
		return nil, r.refuse(conn, h, true, ErrUnsupportedVersion)
	}
	r.logger.Debug("protocol: unsupported version, answering UNSUPPORTED_VERSION", r.attrs(conn, h, true, nil)...)
	return AppendResponse(nil, h.CorrelationID, ResponseHeaderVersion(h.APIKey, h.APIVersion), resp), nil
}

// errorResponse builds an otherwise empty response for key at version with
// its top-level ErrorCode set to code. It reports false if kmsg cannot
// encode the key at that version, if the response type has no top-level
// ErrorCode, or if that field is not serialized at this version (Metadata
// only gained one in v13, for instance). The last is found by encoding the
// response with and without the code and comparing, which follows kmsg's
// own notion of which fields exist at which version instead of a table we
// would have to keep in step with it.
func errorResponse(key, version, code int16) (kmsg.Response, bool) {
	resp := kmsg.ResponseForKey(key)
	if resp == nil || version < 0 || version > resp.MaxVersion() {
		return nil, false
	}
	resp.SetVersion(version)
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	f := v.Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 || !f.CanSet() {
		return nil, false
	}
	without := resp.AppendTo(nil)
	f.SetInt(int64(code))
	with := resp.AppendTo(nil)
	if string(without) == string(with) {
		return nil, false
	}
	return resp, true
}
