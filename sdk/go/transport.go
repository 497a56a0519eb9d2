package seshat

import (
	"bufio"
	"example.invalid/seshat/sdk/go/seshat/protocol"
	"io"
	"os"
	"path/filepath"
)

// maxLine is the longest message the client reads from the server.
const maxLine = 64 << 20

// transport carries the protocol's messages: lines on a child's stdio, or WebSocket text
// frames to a remote server.
type transport interface {
	// send writes one message (a JSON object, without a line break).
	send(message []byte) error
	// recv reads the next message; an error ends the client.
	recv() ([]byte, error)
	// close ends the transport: the child's input closes, or the connection.
	close() error
}

// stdio is a child `seshat serve`'s stdin and stdout.
type stdio struct {
	stdin io.WriteCloser
	lines *bufio.Scanner
}

func (s *stdio) send(message []byte) error {
	_, err := s.stdin.Write(append(message, '\n'))
	return err
}

func (s *stdio) recv() ([]byte, error) {
	if !s.lines.Scan() {
		if err := s.lines.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	return s.lines.Bytes(), nil
}

func (s *stdio) close() error {
	return s.stdin.Close()
}

// remote is a WebSocket connection to `seshat serve --listen`.
type remote struct {
	ws *wsConn
}

func (r *remote) send(message []byte) error {
	return r.ws.writeText(message)
}

func (r *remote) recv() ([]byte, error) {
	return r.ws.readMessage()
}

func (r *remote) close() error {
	return r.ws.close()
}

// instructionFiles are read into the system prompt, in order (as Seshat reads them locally).
var instructionFiles = []string{"AGENTS.md", "CLAUDE.md"}

// project is the project key and the instruction files a remote server is told of.
func (c *Client) project() (string, []protocol.InstructionFile) {
	dir := c.cfg.ProjectDir
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	key := c.cfg.Project
	if key == "" {
		key = abs
	}
	var files []protocol.InstructionFile
	for _, name := range instructionFiles {
		text, err := os.ReadFile(filepath.Join(abs, name))
		if err == nil && len(text) > 0 {
			files = append(files, protocol.InstructionFile{Name: name, Text: string(text)})
		}
	}
	return key, files
}
