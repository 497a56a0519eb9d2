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

// Entity is a node of the graph.
type Entity struct {
	// Name is unique within its scope (case and accents folded).
	Name string `json:"name"`
	// EntityType is what it is ("person", "project", ...).
	EntityType string `json:"entityType"`
	// Observations are the facts about it.
	Observations []string `json:"observations"`
	// Scope is "user", "project", "cross" or "team:NAME".
	Scope string `json:"scope,omitempty"`
}

// Relation is an edge of the graph.
type Relation struct {
	// From and To name entities.
	From string `json:"from"`
	To   string `json:"to"`
	// RelationType is in the active voice ("works_on").
	RelationType string `json:"relationType"`
}

// Graph is entities and the relations among them.
type Graph struct {
	// Entities found, best first.
	Entities []Entity `json:"entities"`
	// Relations among them.
	Relations []Relation `json:"relations"`
}

func (m *Memory) tool(ctx context.Context, name string, args map[string]interface{}, out interface{}) error {
	return m.client.call(ctx, "memory/"+name, args, out)
}

func scoped(args map[string]interface{}, scope string) map[string]interface{} {
	if scope != "" {
		args["scope"] = scope
	}
	return args
}

// CreateEntities adds entities (in scope; "" for the default, "project" inside one).
func (m *Memory) CreateEntities(ctx context.Context, scope string, entities ...Entity) ([]Entity, error) {
	var r struct {
		Entities []Entity `json:"entities"`
	}
	err := m.tool(ctx, "create_entities", scoped(map[string]interface{}{"entities": entities}, scope), &r)
	return r.Entities, err
}

// CreateRelations adds relations between existing entities.
func (m *Memory) CreateRelations(ctx context.Context, scope string, relations ...Relation) error {
	return m.tool(ctx, "create_relations", scoped(map[string]interface{}{"relations": relations}, scope), nil)
}

// AddObservations adds facts to an existing entity.
func (m *Memory) AddObservations(ctx context.Context, entity string, contents ...string) error {
	args := map[string]interface{}{"observations": []map[string]interface{}{{"entityName": entity, "contents": contents}}}
	return m.tool(ctx, "add_observations", args, nil)
}

// DeleteEntities deletes entities (restorable with `seshat memory --action restore`).
func (m *Memory) DeleteEntities(ctx context.Context, names ...string) error {
	return m.tool(ctx, "delete_entities", map[string]interface{}{"entityNames": names}, nil)
}

// SearchNodes finds entities by words (and by meaning when memory is embedded).
func (m *Memory) SearchNodes(ctx context.Context, query string) (Graph, error) {
	var g Graph
	err := m.tool(ctx, "search_nodes", map[string]interface{}{"query": query}, &g)
	return g, err
}

// OpenNodes returns the named entities and the relations among them.
func (m *Memory) OpenNodes(ctx context.Context, names ...string) (Graph, error) {
	var g Graph
	err := m.tool(ctx, "open_nodes", map[string]interface{}{"names": names}, &g)
	return g, err
}

// ReadGraph returns the graph (a page of it).
func (m *Memory) ReadGraph(ctx context.Context) (Graph, error) {
	var g Graph
	err := m.tool(ctx, "read_graph", map[string]interface{}{}, &g)
	return g, err
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
	err := m.tool(ctx, tool, args, &out)
	return out, err
}

// DeleteObservations deletes facts from an entity (restorable with `seshat memory --action
// restore`).
func (m *Memory) DeleteObservations(ctx context.Context, scope, entity string, contents ...string) error {
	args := map[string]interface{}{"deletions": []map[string]interface{}{{"entityName": entity, "observations": contents}}}
	return m.tool(ctx, "delete_observations", scoped(args, scope), nil)
}

// DeleteRelations deletes relations (restorable with `seshat memory --action restore`).
func (m *Memory) DeleteRelations(ctx context.Context, scope string, relations ...Relation) error {
	return m.tool(ctx, "delete_relations", scoped(map[string]interface{}{"relations": relations}, scope), nil)
}

// SearchNodesIn is SearchNodes in one scope ("user", "project" or "cross"), at most limit
// entities (0: the server's default).
func (m *Memory) SearchNodesIn(ctx context.Context, scope, query string, limit int) (Graph, error) {
	args := map[string]interface{}{"query": query}
	if limit > 0 {
		args["limit"] = limit
	}
	var g Graph
	err := m.tool(ctx, "search_nodes", scoped(args, scope), &g)
	return g, err
}

// ReadGraphPage returns a page of the graph in scope ("" for every scope): limit entities
// (0: the server's default) after skipping offset; the answer's note gives the next offset.
func (m *Memory) ReadGraphPage(ctx context.Context, scope string, offset, limit int) (Graph, error) {
	args := map[string]interface{}{"offset": offset}
	if limit > 0 {
		args["limit"] = limit
	}
	var g Graph
	err := m.tool(ctx, "read_graph", scoped(args, scope), &g)
	return g, err
}
