package seshat

import (
	"context"
	"encoding/json"
	"example.invalid/seshat/sdk/go/seshat/protocol"
)

// Memory is the long-term knowledge graph: entities with observations, relations between them,
// in scopes "user", "project" and "cross".
type Memory struct{ client *Client }

// Memory returns the client's long-term memory.
func (c *Client) Memory() *Memory { return &Memory{client: c} }

// Entity is a node of the graph: a name unique within its scope (case and accents folded), what
// it is ("person", "project", ...), the facts about it and its scope ("user", "project", "cross" or
// "team:NAME"). The scope of an entity given to CreateEntities is the call's, not its own.
type Entity = protocol.Entity

// Relation is an edge of the graph, in the active voice ("works_on").
type Relation = protocol.Relation

// Graph is entities (best or most recent first) and the relations among them; Note says how to
// read on when the answer was cut.
type Graph = protocol.GraphPage

// CreateEntities adds entities (in scope; "" for the default, "project" inside one).
func (m *Memory) CreateEntities(ctx context.Context, scope string, entities ...Entity) ([]Entity, error) {
	params := protocol.CreateEntitiesParams{Scope: protocol.Scope(scope)}
	for _, e := range entities {
		params.Entities = append(params.Entities, protocol.NewEntity{Name: e.Name, EntityType: e.EntityType, Observations: e.Observations})
	}
	var r protocol.CreateEntitiesResult
	err := m.client.call(ctx, protocol.MethodMemoryCreateEntities, params, &r)
	return r.Entities, err
}

func specs(relations []Relation) []protocol.RelationSpec {
	out := make([]protocol.RelationSpec, 0, len(relations))
	for _, r := range relations {
		out = append(out, protocol.RelationSpec{From: r.From, To: r.To, RelationType: r.RelationType})
	}
	return out
}

// CreateRelations adds relations between existing entities.
func (m *Memory) CreateRelations(ctx context.Context, scope string, relations ...Relation) error {
	params := protocol.RelationsParams{Relations: specs(relations), Scope: protocol.Scope(scope)}
	return m.client.call(ctx, protocol.MethodMemoryCreateRelations, params, nil)
}

// AddObservations adds facts to an existing entity.
func (m *Memory) AddObservations(ctx context.Context, entity string, contents ...string) error {
	params := protocol.AddObservationsParams{Observations: []protocol.ObservationsToAdd{{EntityName: entity, Contents: contents}}}
	return m.client.call(ctx, protocol.MethodMemoryAddObservations, params, nil)
}

// DeleteEntities deletes entities (restorable with `seshat memory --action restore`).
func (m *Memory) DeleteEntities(ctx context.Context, names ...string) error {
	params := protocol.DeleteEntitiesParams{EntityNames: names}
	return m.client.call(ctx, protocol.MethodMemoryDeleteEntities, params, nil)
}

// SearchNodes finds entities by words (and by meaning when memory is embedded).
func (m *Memory) SearchNodes(ctx context.Context, query string) (Graph, error) {
	return m.SearchNodesIn(ctx, "", query, 0)
}

// OpenNodes returns the named entities and the relations among them.
func (m *Memory) OpenNodes(ctx context.Context, names ...string) (Graph, error) {
	var g Graph
	err := m.client.call(ctx, protocol.MethodMemoryOpenNodes, protocol.OpenNodesParams{Names: names}, &g)
	return g, err
}

// ReadGraph returns the graph (its first page).
func (m *Memory) ReadGraph(ctx context.Context) (Graph, error) {
	return m.ReadGraphPage(ctx, "", 0, 0)
}

// Note is a key/value note (`seshat memory --action set`): a standing preference or fact,
// replaced when its key is set again.
type Note = protocol.Note

// SetNote sets a note in scope ("" for "user"), replacing the value of an existing key.
func (m *Memory) SetNote(ctx context.Context, scope, key, value string) (Note, error) {
	var r protocol.NoteResult
	params := protocol.NotesSetParams{Key: key, Value: value, Scope: protocol.Scope(scope)}
	err := m.client.call(ctx, protocol.MethodNotesSet, params, &r)
	return r.Note, err
}

// Notes lists the notes of scope ("" for "user"), most recently set first.
func (m *Memory) Notes(ctx context.Context, scope string) ([]Note, error) {
	var r protocol.NotesResult
	err := m.client.call(ctx, protocol.MethodNotesList, protocol.NotesListParams{Scope: protocol.Scope(scope)}, &r)
	return r.Notes, err
}

// SearchNotes finds notes whose key or value contains query (ignoring case), in scope or, with
// "", in every scope reads cover.
func (m *Memory) SearchNotes(ctx context.Context, scope, query string) ([]Note, error) {
	var r protocol.NotesResult
	params := protocol.NotesSearchParams{Query: query, Scope: protocol.Scope(scope)}
	err := m.client.call(ctx, protocol.MethodNotesSearch, params, &r)
	return r.Notes, err
}

// Raw calls a memory tool by name with JSON arguments, for what the typed methods leave out.
func (m *Memory) Raw(ctx context.Context, tool string, args map[string]interface{}) (json.RawMessage, error) {
	var out json.RawMessage
	err := m.client.call(ctx, "memory/"+tool, args, &out)
	return out, err
}

// DeleteObservations deletes facts from an entity (restorable with `seshat memory --action
// restore`).
func (m *Memory) DeleteObservations(ctx context.Context, scope, entity string, contents ...string) error {
	params := protocol.DeleteObservationsParams{
		Deletions: []protocol.ObservationsToDelete{{EntityName: entity, Observations: contents}},
		Scope:     protocol.Scope(scope),
	}
	return m.client.call(ctx, protocol.MethodMemoryDeleteObservations, params, nil)
}

// DeleteRelations deletes relations (restorable with `seshat memory --action restore`).
func (m *Memory) DeleteRelations(ctx context.Context, scope string, relations ...Relation) error {
	params := protocol.RelationsParams{Relations: specs(relations), Scope: protocol.Scope(scope)}
	return m.client.call(ctx, protocol.MethodMemoryDeleteRelations, params, nil)
}

// SearchNodesIn is SearchNodes in one scope ("" for every scope reads cover), at most limit
// entities (0: the server's default).
func (m *Memory) SearchNodesIn(ctx context.Context, scope, query string, limit int) (Graph, error) {
	params := protocol.SearchNodesParams{Query: query, Scope: protocol.Scope(scope)}
	if limit > 0 {
		params.Limit = ptr(limit)
	}
	var g Graph
	err := m.client.call(ctx, protocol.MethodMemorySearchNodes, params, &g)
	return g, err
}

// ReadGraphPage returns a page of the graph in scope ("" for every scope): limit entities
// (0: the server's default) after skipping offset; the answer's note gives the next offset.
func (m *Memory) ReadGraphPage(ctx context.Context, scope string, offset, limit int) (Graph, error) {
	params := protocol.ReadGraphParams{Offset: ptr(offset), Scope: protocol.Scope(scope)}
	if limit > 0 {
		params.Limit = ptr(limit)
	}
	var g Graph
	err := m.client.call(ctx, protocol.MethodMemoryReadGraph, params, &g)
	return g, err
}

// ObservationChange is what AddObservationsReplacing did to one entity: the facts it added, the
// ones they replaced (kept as history), and new facts that look like another value of an
// attribute the entity holds (Conflicts).
type ObservationChange = protocol.ObservationAdds

// AddObservationsReplacing adds facts to an existing entity, each replacing the current
// observations named in replaces (their exact text, or the same ignoring case): those stop being
// current and are kept as history. A replaced observation the entity does not hold is an error
// and nothing is written.
func (m *Memory) AddObservationsReplacing(ctx context.Context, scope, entity string, replaces []string, contents ...string) (ObservationChange, error) {
	params := protocol.AddObservationsParams{
		Observations: []protocol.ObservationsToAdd{{EntityName: entity, Contents: contents, Replaces: replaces}},
		Scope:        protocol.Scope(scope),
	}
	var r protocol.AddObservationsResult
	if err := m.client.call(ctx, protocol.MethodMemoryAddObservations, params, &r); err != nil {
		return ObservationChange{}, err
	}
	if len(r.Results) == 0 {
		return ObservationChange{}, &Error{Code: "server_error", Message: "add_observations answered no result for " + entity}
	}
	return r.Results[0], nil
}

// History is every version of an entity (in scope; "" to look it up as the memory tools do),
// oldest first: what each change made it, who made it and when.
func (m *Memory) History(ctx context.Context, scope, name string) (protocol.MemoryHistoryResult, error) {
	var r protocol.MemoryHistoryResult
	err := m.client.call(ctx, protocol.MethodMemoryHistory, protocol.MemoryHistoryParams{Name: name, Scope: protocol.Scope(scope)}, &r)
	return r, err
}

// Revert brings an entity back to version to (as History numbers them) as a new version; what it
// drops is a deletion `seshat memory --action restore` brings back. It returns the new version
// and the entity as it now is.
func (m *Memory) Revert(ctx context.Context, scope, name string, to int) (protocol.MemoryRevertResult, error) {
	var r protocol.MemoryRevertResult
	params := protocol.MemoryRevertParams{Name: name, To: uint32(to), Scope: protocol.Scope(scope)}
	err := m.client.call(ctx, protocol.MethodMemoryRevert, params, &r)
	return r, err
}

// UndoSession takes back everything the agent of session wrote to the caller's memory: what it
// added is deleted (one restorable deletion), what it replaced is current again, what it deleted
// is restored. Writes by other sessions stay.
func (m *Memory) UndoSession(ctx context.Context, session string) (protocol.Undone, error) {
	var r protocol.Undone
	err := m.client.call(ctx, protocol.MethodMemoryUndo, protocol.MemoryUndoParams{Session: session}, &r)
	return r, err
}

// Proposals lists the writes to the memory of teams that require review: those waiting for the
// caller (a reviewer's teams') and the caller's own; of team only unless "", decided ones too
// with all.
func (m *Memory) Proposals(ctx context.Context, team string, all bool) ([]protocol.Proposal, error) {
	var r protocol.MemoryProposalsResult
	params := protocol.MemoryProposalsParams{All: all}
	if team != "" {
		params.Team = &team
	}
	err := m.client.call(ctx, protocol.MethodMemoryProposals, params, &r)
	return r.Proposals, err
}

// Approve approves a proposal: its write is made, as its proposer's (a reviewer's act).
func (m *Memory) Approve(ctx context.Context, id int64) (protocol.Proposal, error) {
	var r protocol.Proposal
	err := m.client.call(ctx, protocol.MethodMemoryApprove, protocol.MemoryDecideParams{ID: id}, &r)
	return r, err
}

// Reject rejects a proposal, saying why: nothing of it is written (a reviewer's act).
func (m *Memory) Reject(ctx context.Context, id int64, reason string) (protocol.Proposal, error) {
	var r protocol.Proposal
	params := protocol.MemoryDecideParams{ID: id}
	if reason != "" {
		params.Reason = &reason
	}
	err := m.client.call(ctx, protocol.MethodMemoryReject, params, &r)
	return r, err
}
